// Accounts, refresh tokens (by hash), revoked token families, the generated signing key and login locks.
import { Migration } from "@mikro-orm/migrations";

export class ProtectionIdentity0001 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_account" (
      "id" uuid primary key,
      "email" text not null unique,
      "display_name" text not null,
      "password_hash" text not null,
      "role" text not null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_refresh_token" (
      "token_hash" text primary key,
      "family_id" uuid not null,
      "account_id" uuid not null references "protection_account" ("id") on delete cascade,
      "expires_at" timestamptz not null,
      "used_at" timestamptz null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_refresh_token_family_idx" on "protection_refresh_token" ("family_id")`);
    this.addSql(`create index "protection_refresh_token_account_idx" on "protection_refresh_token" ("account_id")`);
    this.addSql(`create table "protection_revoked_family" (
      "family_id" uuid primary key,
      "account_id" uuid not null,
      "reason" text not null,
      "access_expires_at" timestamptz not null,
      "revoked_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_revoked_family_expiry_idx" on "protection_revoked_family" ("access_expires_at")`);
    this.addSql(`create table "protection_signing_key" (
      "kid" text primary key,
      "private_key_pem" text not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_login_lock" (
      "email_hash" text primary key,
      "locked_until" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    for (const table of [
      "protection_login_lock",
      "protection_signing_key",
      "protection_revoked_family",
      "protection_refresh_token",
      "protection_account",
    ]) {
      this.addSql(`drop table if exists "${table}"`);
    }
  }
}
