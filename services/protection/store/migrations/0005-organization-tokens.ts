// Bulk enrollment tokens of organizations (kept as a SHA-256 for redemption and sealed for the QR
// code), the generated key that seals them, and one membership per account in an organization.
import { Migration } from "@mikro-orm/migrations";

export class ProtectionOrganizationTokens0005 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_organization_token" (
      "id" uuid primary key,
      "organization_id" uuid not null references "protection_organization" ("id") on delete cascade,
      "label" text not null,
      "tier" text not null check ("tier" in ('self', 'partner', 'authority')),
      "token_hash" text not null,
      "token_sealed" bytea not null,
      "max_uses" integer not null check ("max_uses" between 1 and 100000),
      "uses" integer not null default 0 check ("uses" between 0 and "max_uses"),
      "created_by" uuid null references "protection_account" ("id") on delete set null,
      "created_at" timestamptz not null,
      "revoked_at" timestamptz null
    )`);
    this.addSql(`create unique index "protection_organization_token_hash_uq" on "protection_organization_token" ("token_hash")`);
    this.addSql(
      `create index "protection_organization_token_org_idx" on "protection_organization_token" ("organization_id", "created_at")`,
    );
    this.addSql(`create table "protection_organization_token_key" (
      "id" smallint primary key check ("id" = 1),
      "secret" bytea not null,
      "created_at" timestamptz not null
    )`);
    // An account is a member once, whatever address it was added or invited under.
    this.addSql(
      `create unique index "protection_organization_member_account_uq" on "protection_organization_member" ("organization_id", "account_id") where "account_id" is not null`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "protection_organization_member_account_uq"`);
    this.addSql(`drop table if exists "protection_organization_token_key"`);
    this.addSql(`drop table if exists "protection_organization_token"`);
  }
}
