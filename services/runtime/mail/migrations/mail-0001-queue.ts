// The mail queue of one module, under its prefix (see mail-tables.ts): a row per message until it
// is sent (then deleted) or has failed for good (then kept, marked failed, for an operator).
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export function mailQueueMigration(table: string): Constructor<Migration> {
  return class MailQueue0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${table}" (
      "id" uuid not null primary key,
      "recipient" text not null,
      "subject" text not null,
      "text_body" text not null,
      "html_body" text null,
      "status" text not null default 'pending' check ("status" in ('pending', 'failed')),
      "attempt_count" int not null default 0,
      "next_attempt_at" timestamptz not null,
      "lease_token" uuid null,
      "last_error" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
      // The worker's claim reads only pending rows, the earliest due first.
      this.addSql(`create index "${table}_due_idx" on "${table}" ("next_attempt_at", "created_at") where "status" = 'pending'`);
    }

    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${table}"`);
    }
  };
}
