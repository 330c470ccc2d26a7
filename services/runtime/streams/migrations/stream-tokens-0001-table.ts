// Stream tokens: a hash and an expiry per token. Expired rows are pruned by expiry, hence its index.
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export function streamTokenTableMigration(name: string): Constructor<Migration> {
  return class StreamTokenTable0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${name}" (
      "token_hash" text primary key,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null
    )`);
      this.addSql(`create index "${name}_expires_idx" on "${name}" ("expires_at")`);
    }

    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
    }
  };
}
