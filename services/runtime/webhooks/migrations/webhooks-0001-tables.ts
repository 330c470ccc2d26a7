// Webhook delivery: the durable queue, the attempt log (indexed for the 24-hour statistics and
// the listing filters), endpoint state (disabled after 410) and this database's consumer id.
import { Migration } from "@mikro-orm/migrations";

export class TrackingWebhooks0004 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "tracking_webhook_delivery" (
      "id" uuid not null primary key,
      "event_id" uuid not null,
      "endpoint_key" text not null,
      "endpoint" text not null,
      "event_type" text not null,
      "webhook_id" text not null,
      "body" text not null,
      "status" text not null default 'pending' check ("status" in ('pending', 'delivered', 'failed', 'cancelled')),
      "attempt_count" int not null default 0,
      "next_attempt_at" timestamptz not null,
      "lease_token" uuid null,
      "last_error" text null,
      "last_status_code" int null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null,
      "finished_at" timestamptz null,
      -- A redelivered event finds its rows already there and adds nothing.
      constraint "tracking_webhook_delivery_event_endpoint_key" unique ("event_id", "endpoint_key")
    )`);
    // The dispatcher's claim and the queue depth read only unfinished rows.
    this.addSql(
      `create index "tracking_webhook_delivery_due_idx" on "tracking_webhook_delivery" ("next_attempt_at") where "status" = 'pending'`,
    );
    this.addSql(
      `create index "tracking_webhook_delivery_endpoint_pending_idx" on "tracking_webhook_delivery" ("endpoint_key") where "status" = 'pending'`,
    );

    this.addSql(`create table "tracking_webhook_attempt" (
      "id" uuid not null primary key,
      "delivery_id" uuid not null references "tracking_webhook_delivery" ("id") on delete cascade,
      "event_id" uuid not null,
      "attempt_number" int not null,
      "correlation_id" text not null,
      "event_type" text not null,
      "endpoint" text not null,
      "success" boolean not null,
      "http_status_code" int null,
      "duration_ms" int not null,
      "error" text null,
      "created_at" timestamptz not null
    )`);
    // Newest first, unfiltered or since a time (and the 24-hour window of the status).
    this.addSql(`create index "tracking_webhook_attempt_created_idx" on "tracking_webhook_attempt" ("created_at" desc, "id" desc)`);
    this.addSql(`create index "tracking_webhook_attempt_type_created_idx" on "tracking_webhook_attempt" ("event_type", "created_at" desc)`);
    // The success filter, the 24-hour failure count and lastDeliveredAt.
    this.addSql(`create index "tracking_webhook_attempt_success_created_idx" on "tracking_webhook_attempt" ("success", "created_at" desc)`);
    this.addSql(`create index "tracking_webhook_attempt_delivery_idx" on "tracking_webhook_attempt" ("delivery_id")`);

    this.addSql(`create table "tracking_webhook_endpoint" (
      "endpoint_key" text not null primary key,
      "endpoint" text not null,
      "disabled_at" timestamptz null,
      "disabled_reason" text null,
      "updated_at" timestamptz not null
    )`);

    this.addSql(`create table "tracking_webhook_consumer" (
      "singleton" boolean not null primary key default true check ("singleton"),
      "consumer_id" uuid not null
    )`);
    this.addSql(`insert into "tracking_webhook_consumer" ("consumer_id") values (gen_random_uuid())`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "tracking_webhook_consumer"`);
    this.addSql(`drop table if exists "tracking_webhook_endpoint"`);
    this.addSql(`drop table if exists "tracking_webhook_attempt"`);
    this.addSql(`drop table if exists "tracking_webhook_delivery"`);
  }
}
