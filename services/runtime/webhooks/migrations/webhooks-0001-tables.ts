// Webhook delivery: the durable queue, the attempt log (indexed for the 24-hour statistics and
// the listing filters), endpoint state (disabled after 410) and this database's consumer id.
// One set of tables per module, under the module's prefix (see webhook-tables.ts).
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export function webhookTablesMigration(prefix: string): Constructor<Migration> {
  return class WebhookTables0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${prefix}_delivery" (
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
      constraint "${prefix}_delivery_event_endpoint_key" unique ("event_id", "endpoint_key")
    )`);
      // The dispatcher's claim and the queue depth read only unfinished rows.
      this.addSql(`create index "${prefix}_delivery_due_idx" on "${prefix}_delivery" ("next_attempt_at") where "status" = 'pending'`);
      this.addSql(
        `create index "${prefix}_delivery_endpoint_pending_idx" on "${prefix}_delivery" ("endpoint_key") where "status" = 'pending'`,
      );

      this.addSql(`create table "${prefix}_attempt" (
      "id" uuid not null primary key,
      "delivery_id" uuid not null references "${prefix}_delivery" ("id") on delete cascade,
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
      this.addSql(`create index "${prefix}_attempt_created_idx" on "${prefix}_attempt" ("created_at" desc, "id" desc)`);
      this.addSql(`create index "${prefix}_attempt_type_created_idx" on "${prefix}_attempt" ("event_type", "created_at" desc)`);
      // The success filter, the 24-hour failure count and lastDeliveredAt.
      this.addSql(`create index "${prefix}_attempt_success_created_idx" on "${prefix}_attempt" ("success", "created_at" desc)`);
      this.addSql(`create index "${prefix}_attempt_delivery_idx" on "${prefix}_attempt" ("delivery_id")`);

      this.addSql(`create table "${prefix}_endpoint" (
      "endpoint_key" text not null primary key,
      "endpoint" text not null,
      "disabled_at" timestamptz null,
      "disabled_reason" text null,
      "updated_at" timestamptz not null
    )`);

      this.addSql(`create table "${prefix}_consumer" (
      "singleton" boolean not null primary key default true check ("singleton"),
      "consumer_id" uuid not null
    )`);
      this.addSql(`insert into "${prefix}_consumer" ("consumer_id") values (gen_random_uuid())`);
    }

    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${prefix}_consumer"`);
      this.addSql(`drop table if exists "${prefix}_endpoint"`);
      this.addSql(`drop table if exists "${prefix}_attempt"`);
      this.addSql(`drop table if exists "${prefix}_delivery"`);
    }
  };
}
