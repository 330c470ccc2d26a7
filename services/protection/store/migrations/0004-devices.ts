// Devices, enrollments, issued certificates (with their revocations), the generated device CA and
// the device events the service records itself.
import { Migration } from "@mikro-orm/migrations";

export class ProtectionDevices0004 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_device_ca" (
      "id" smallint primary key check ("id" = 1),
      "cert_pem" text not null,
      "key_pem" text not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_enrollment" (
      "id" uuid primary key,
      "tier" text not null check ("tier" in ('self', 'partner', 'authority')),
      "status" text not null check ("status" in ('pending', 'active', 'pending_delay', 'pending_approval', 'unenrolled')),
      "token_hash" text not null unique,
      "token_sealed" text null,
      "token_expires_at" timestamptz not null,
      "redeemed_at" timestamptz null,
      "device_id" uuid null,
      "account_id" uuid null references "protection_account" ("id") on delete cascade,
      "created_by" uuid not null references "protection_account" ("id") on delete cascade,
      "partner_account_id" uuid null references "protection_account" ("id") on delete set null,
      "organization_id" uuid null,
      "dns_blocking" boolean not null,
      "app_blocking" boolean not null,
      "bypass_detection" boolean not null,
      "send_block_events" boolean not null,
      "send_tamper_events" boolean not null,
      "policy_type" text not null,
      "delay_hours" integer null,
      "unenroll_requested_at" timestamptz null,
      "eligible_at" timestamptz null,
      "unenrolled_at" timestamptz null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_enrollment_account_idx" on "protection_enrollment" ("account_id")`);
    this.addSql(`create index "protection_enrollment_creator_idx" on "protection_enrollment" ("created_by")`);
    this.addSql(`create index "protection_enrollment_partner_idx" on "protection_enrollment" ("partner_account_id")`);
    this.addSql(`create index "protection_enrollment_device_idx" on "protection_enrollment" ("device_id")`);
    this.addSql(`create index "protection_enrollment_organization_idx" on "protection_enrollment" ("organization_id")`);
    this.addSql(`create index "protection_enrollment_due_idx" on "protection_enrollment" ("eligible_at") where "status" = 'pending_delay'`);
    this.addSql(`create table "protection_device" (
      "id" uuid primary key,
      "account_id" uuid not null references "protection_account" ("id") on delete cascade,
      "enrollment_id" uuid not null references "protection_enrollment" ("id"),
      "organization_id" uuid null,
      "assigned_at" timestamptz null,
      "platform" text not null,
      "hostname" text not null,
      "agent_version" text not null,
      "status" text not null check ("status" in ('active', 'offline', 'unenrolled')),
      "last_heartbeat" timestamptz null,
      "blocklist_version" integer not null,
      "integrity_ok" boolean null,
      "certificate_serial" text not null,
      "certificate_not_after" timestamptz not null,
      "config_digest" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_device_account_idx" on "protection_device" ("account_id")`);
    this.addSql(`create index "protection_device_enrollment_idx" on "protection_device" ("enrollment_id")`);
    this.addSql(`create index "protection_device_organization_idx" on "protection_device" ("organization_id")`);
    this.addSql(
      `create index "protection_device_active_idx" on "protection_device" ((coalesce("last_heartbeat", "created_at"))) where "status" = 'active'`,
    );
    this.addSql(`create table "protection_certificate" (
      "serial" text primary key,
      "device_id" uuid not null,
      "enrollment_id" uuid not null,
      "not_before" timestamptz not null,
      "not_after" timestamptz not null,
      "created_at" timestamptz not null,
      "revoked_at" timestamptz null,
      "revocation_reason" text null
    )`);
    this.addSql(`create index "protection_certificate_device_idx" on "protection_certificate" ("device_id")`);
    this.addSql(
      `create index "protection_certificate_revoked_idx" on "protection_certificate" ("not_after") where "revoked_at" is not null`,
    );
    this.addSql(`create table "protection_device_event" (
      "id" uuid primary key,
      "device_id" uuid not null,
      "event_type" text not null,
      "timestamp" timestamptz not null,
      "detail" jsonb not null default '{}'
    )`);
    this.addSql(`create index "protection_device_event_device_idx" on "protection_device_event" ("device_id", "timestamp")`);
  }

  override async down(): Promise<void> {
    for (const table of [
      "protection_device_event",
      "protection_certificate",
      "protection_device",
      "protection_enrollment",
      "protection_device_ca",
    ]) {
      this.addSql(`drop table if exists "${table}"`);
    }
  }
}
