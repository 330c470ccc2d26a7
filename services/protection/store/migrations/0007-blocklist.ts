// The signed blocklist and its administration: the signing seed (when no setting holds one),
// entries, versions (each with the domains it added and removed, so a delta from N is the net of
// at most Protection:Blocklist:RetainedVersions small rows), the current version's domains, the
// log of changed domains a compilation takes,
// accounts' reports, the review queue (one open item per domain) and app signatures. Domains are
// `collate "C"`: PostgreSQL orders them as the signed answers do (by bytes).
import { Migration } from "@mikro-orm/migrations";

const categories = `'online_casino', 'sports_betting', 'poker', 'lottery', 'bingo', 'fantasy_sports', 'crypto_gambling', 'affiliate', 'payment_processor', 'other'`;

export class ProtectionBlocklist0007 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_blocklist_signing_key" (
      "id" smallint primary key check ("id" = 1),
      "seed" text not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_blocklist_entry" (
      "id" uuid primary key,
      "domain" text collate "C" not null unique,
      "reason" text not null check ("reason" in ('manual', 'agent_report', 'federated_report', 'import')),
      "category" text not null check ("category" in (${categories})),
      "notes" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_blocklist_entry_category_idx" on "protection_blocklist_entry" ("category", "created_at")`);
    this.addSql(`create index "protection_blocklist_entry_reason_idx" on "protection_blocklist_entry" ("reason", "created_at")`);
    this.addSql(`create index "protection_blocklist_entry_created_idx" on "protection_blocklist_entry" ("created_at", "id")`);
    this.addSql(`create table "protection_blocklist_version" (
      "version" integer primary key check ("version" > 0),
      "entry_count" integer not null,
      "list_sha256" text not null,
      "added" text[] not null,
      "removed" text[] not null,
      "created_at" timestamptz not null,
      "key_id" text not null,
      "signature" text not null
    )`);
    this.addSql(`create table "protection_blocklist_domain" (
      "domain" text collate "C" primary key
    )`);
    // Every change of the entries' domains, written by the database itself (so an import by SQL
    // counts too) and taken by the next compilation: it compares only these domains, never the
    // whole list, with the current version.
    this.addSql(`create table "protection_blocklist_change" (
      "id" bigserial primary key,
      "domain" text collate "C" not null
    )`);
    this.addSql(`create function "protection_blocklist_entry_inserted"() returns trigger language plpgsql as $$
      begin
        insert into "protection_blocklist_change" ("domain") select "domain" from "inserted_rows";
        return null;
      end $$`);
    this.addSql(`create function "protection_blocklist_entry_deleted"() returns trigger language plpgsql as $$
      begin
        insert into "protection_blocklist_change" ("domain") select "domain" from "deleted_rows";
        return null;
      end $$`);
    this.addSql(`create function "protection_blocklist_entry_updated"() returns trigger language plpgsql as $$
      begin
        insert into "protection_blocklist_change" ("domain")
          select o."domain" from "old_rows" o join "new_rows" n using ("id") where o."domain" <> n."domain"
          union all
          select n."domain" from "old_rows" o join "new_rows" n using ("id") where o."domain" <> n."domain";
        return null;
      end $$`);
    this.addSql(`create trigger "protection_blocklist_entry_insert_trg" after insert on "protection_blocklist_entry"
      referencing new table as "inserted_rows" for each statement execute function "protection_blocklist_entry_inserted"()`);
    this.addSql(`create trigger "protection_blocklist_entry_delete_trg" after delete on "protection_blocklist_entry"
      referencing old table as "deleted_rows" for each statement execute function "protection_blocklist_entry_deleted"()`);
    this.addSql(`create trigger "protection_blocklist_entry_update_trg" after update on "protection_blocklist_entry"
      referencing old table as "old_rows" new table as "new_rows" for each statement execute function "protection_blocklist_entry_updated"()`);
    this.addSql(`create table "protection_blocklist_report" (
      "id" uuid primary key,
      "account_id" uuid null references "protection_account" ("id") on delete set null,
      "domain" text not null,
      "reason" text not null,
      "context" text null,
      "created_at" timestamptz not null,
      "upstream_sent_at" timestamptz null
    )`);
    this.addSql(
      `create index "protection_blocklist_report_unsent_idx" on "protection_blocklist_report" ("created_at") where "upstream_sent_at" is null`,
    );
    this.addSql(`create table "protection_review_item" (
      "id" uuid primary key,
      "domain" text collate "C" not null,
      "status" text not null check ("status" in ('pending', 'deferred', 'approved', 'rejected')),
      "report_count" integer not null,
      "sources" text[] not null,
      "reasons" text[] not null,
      "confidence_sum" double precision not null,
      "contexts" text[] not null,
      "first_reported_at" timestamptz not null,
      "last_reported_at" timestamptz not null,
      "defer_until" timestamptz null,
      "notes" text null,
      "category" text null,
      "entry_id" uuid null references "protection_blocklist_entry" ("id") on delete set null,
      "resolved_at" timestamptz null
    )`);
    this.addSql(
      `create unique index "protection_review_item_open_uq" on "protection_review_item" ("domain") where "status" in ('pending', 'deferred')`,
    );
    this.addSql(`create index "protection_review_item_status_idx" on "protection_review_item" ("status", "first_reported_at")`);
    this.addSql(`create index "protection_review_item_reported_idx" on "protection_review_item" ("last_reported_at")`);
    this.addSql(`create table "protection_app_signature" (
      "id" uuid primary key,
      "platform" text not null check ("platform" in ('windows', 'macos', 'linux', 'android', 'ios')),
      "identifier" text not null,
      "identifier_type" text not null check ("identifier_type" in ('package_name', 'bundle_id', 'executable_name', 'cert_sha256')),
      "display_name" text not null,
      "category" text not null check ("category" in (${categories})),
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(
      `create unique index "protection_app_signature_uq" on "protection_app_signature" ("platform", "identifier_type", "identifier")`,
    );
    this.addSql(`create index "protection_app_signature_created_idx" on "protection_app_signature" ("created_at", "id")`);
  }
}
