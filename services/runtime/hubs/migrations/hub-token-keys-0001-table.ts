// Hub token keys: the HMAC keys a module's hub connection tokens are signed with, one row each.
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export function hubTokenKeyTableMigration(name: string): Constructor<Migration> {
  return class HubTokenKeyTable0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${name}" (
      "key_id" text primary key,
      "key" bytea not null,
      "created_at" timestamptz not null default now()
    )`);
    }

    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
    }
  };
}
