// Password reset tokens, by SHA-256: one use, a lifetime, and at most one live token per account
// (a new request deletes the older ones).
import { Migration } from "@mikro-orm/migrations";

export class ProtectionPasswordReset0006 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_password_reset" (
      "token_hash" text primary key,
      "account_id" uuid not null references "protection_account" ("id") on delete cascade,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "protection_password_reset_account_idx" on "protection_password_reset" ("account_id")`);
    this.addSql(`create index "protection_password_reset_expires_idx" on "protection_password_reset" ("expires_at")`);
  }
}
