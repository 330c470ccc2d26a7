// The Tor exit list (one row: the addresses of the last successful refresh) and hosted billing:
// each account's processor customer, its subscriptions as the processor last described them, and
// the ids of the processor's webhook events already applied (each is applied once).
import { Migration } from "@mikro-orm/migrations";

export class ProtectionFederation0009 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_tor_exit_list" (
      "id" smallint primary key check ("id" = 1),
      "exits" text[] not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_billing_customer" (
      "account_id" uuid primary key references "protection_account" ("id") on delete cascade,
      "customer_id" text not null unique,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_billing_subscription" (
      "id" text primary key,
      "account_id" uuid not null references "protection_account" ("id") on delete cascade,
      "customer_id" text not null,
      "plan" text not null check ("plan" in ('standard', 'partner_tier', 'institutional')),
      "status" text not null,
      "current_period_start" timestamptz null,
      "current_period_end" timestamptz null,
      "cancel_at_period_end" boolean not null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(
      `create index "protection_billing_subscription_account_idx" on "protection_billing_subscription" ("account_id", "created_at")`,
    );
    this.addSql(`create table "protection_billing_webhook_event" (
      "event_id" text primary key,
      "type" text not null,
      "received_at" timestamptz not null
    )`);
  }
}
