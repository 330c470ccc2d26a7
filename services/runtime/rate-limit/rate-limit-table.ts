// A rate-limit table: one row per (key, window start) holding the count of hits in that window.
// Each module that limits something has its own table, created by a migration it lists under its
// own name, as with stream tokens and webhooks.
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export interface RateLimitTable {
  name: string;
  /** In order; the module lists each under a name of its own (`<module>-...`). */
  migrations: Constructor<Migration>[];
}

const NAME = /^[a-z][a-z0-9_]{0,50}$/;

/** A rate-limit table, e.g. `rateLimitTable("orders_rate_limit")`. */
export function rateLimitTable(name: string): RateLimitTable {
  // The name goes into SQL text as an identifier: only a plain lower-case name is taken.
  if (!NAME.test(name)) throw new Error(`rate limit table name "${name}" must be a lower-case SQL name`);
  class RateLimitTable0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${name}" (
        "key" text not null,
        "window_start" timestamptz not null,
        "hits" integer not null,
        "expires_at" timestamptz not null,
        primary key ("key", "window_start")
      )`);
      this.addSql(`create index "${name}_expires_idx" on "${name}" ("expires_at")`);
    }

    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
    }
  }
  return { name, migrations: [RateLimitTable0001] };
}
