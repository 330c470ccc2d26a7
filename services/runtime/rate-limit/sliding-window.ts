// A sliding-window rate limit shared by every instance through PostgreSQL: one row per key holding
// the hits of the last window counted per second (`seconds[i]` the Unix second, `counts[i]` the
// hits counted in it: at most a window's worth of seconds, whatever the limit). A hit is counted
// only when it is allowed, in one upsert whose row lock serializes the instances, so a refused
// request never uses up a slot. A second's hits leave the window together, `windowSeconds` after
// the start of that second (so a slot frees up to a second early, never late); the counts are
// exact. The table is UNLOGGED: no write-ahead log, so a count commits without waiting for a disk
// flush (the row lock is held for microseconds); after a crash of PostgreSQL (not a restart) the
// windows start empty. The statement runs as a named prepared statement on the database's read
// lane (no ORM on the path). Hits of one key that arrive while its statement is under way wait
// for it and are then counted together by the next one, in their order, as if they had come one
// after the other at that moment (one round trip for many under load, none added when idle).
// Keys are stored as SHA-256 digests, as in the fixed-window limiter.
import type { Constructor } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import type { Database } from "../database/index.js";
import { digestKey } from "./rate-limiter.js";

export interface SlidingWindowTable {
  name: string;
  /** In order; the module lists each under a name of its own (`<module>-...`). */
  migrations: Constructor<Migration>[];
}

const NAME = /^[a-z][a-z0-9_]{0,50}$/;

/** A sliding-window table, e.g. `slidingWindowTable("orders_request_window")`. */
export function slidingWindowTable(name: string): SlidingWindowTable {
  if (!NAME.test(name)) throw new Error(`sliding window table name "${name}" must be a lower-case SQL name`);
  // The first shape kept every hit's time (an array as long as the limit); the counts replace it.
  class SlidingWindowTable0001 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`create table "${name}" (
        "key" text primary key,
        "hits" timestamptz[] not null,
        "allowed" boolean not null,
        "expires_at" timestamptz not null
      )`);
      this.addSql(`create index "${name}_expires_idx" on "${name}" ("expires_at")`);
    }
    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
    }
  }
  class SlidingWindowTable0002 extends Migration {
    override async up(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
      this.addSql(`create unlogged table "${name}" (
        "key" text primary key,
        "seconds" bigint[] not null,
        "counts" integer[] not null,
        "granted" integer not null,
        "expires_at" timestamptz not null
      )`);
      this.addSql(`create index "${name}_expires_idx" on "${name}" ("expires_at")`);
    }
    override async down(): Promise<void> {
      this.addSql(`drop table if exists "${name}"`);
    }
  }
  return { name, migrations: [SlidingWindowTable0001, SlidingWindowTable0002] };
}

export interface SlidingWindowRule {
  /** Requests allowed in any window of `windowSeconds`. */
  limit: number;
  windowSeconds: number;
}

export interface SlidingWindowDecision {
  allowed: boolean;
  limit: number;
  /** Slots left once this request is counted (0 for a refused one). */
  remaining: number;
  /** Unix seconds when the oldest counted hit leaves the window (a slot frees). */
  resetAt: number;
  /** Seconds until a slot frees, at least 1: the Retry-After of a refusal. */
  retryAfterSeconds: number;
}

export interface SlidingWindowLimiter {
  /** Counts a request on `key` when it is within `rule`; a refused request is not counted. */
  hit(key: string, rule: SlidingWindowRule): Promise<SlidingWindowDecision>;
}

export interface SlidingWindowOptions {
  db: Pick<Database, "reads">;
  table: SlidingWindowTable;
  now?: () => Date;
}

const PRUNE_EVERY_MS = 60_000;

interface HitRow {
  /** How many of the statement's hits were counted (the first ones). */
  granted: number;
  /** bigint[]: pg hands the elements over as text. */
  seconds: (string | number)[];
  counts: number[];
}

/**
 * The upsert: $1 key digest, $2 the hits' Unix second, $3 the window's start in Unix seconds (with
 * its fraction: a second s is still in the window while s > $3), $4 the limit, $5 expires_at, $6
 * the hits asked for. `live` is the stored row's seconds still in the window, `granted` how many
 * of the hits fit, `grown` the row with them added. Everything is computed under the upsert's row
 * lock: the read, the decision and the write.
 */
function hitStatement(table: string): string {
  return `insert into ${table} as w ("key", "seconds", "counts", "granted", "expires_at")
      values ($1, array[$2::bigint], array[least($6::int, $4::int)], least($6::int, $4::int), $5)
    on conflict ("key") do update set ("seconds", "counts", "granted", "expires_at") = (
      select case when g.n > 0 then grown.seconds else live.seconds end,
             case when g.n > 0 then grown.counts else live.counts end,
             g.n,
             $5
        from (select coalesce(array_agg(s order by s), '{}') as seconds, coalesce(array_agg(c order by s), '{}') as counts,
                     coalesce(sum(c), 0)::int as total
                from unnest(w."seconds", w."counts") as u(s, c) where s > $3::float8) as live,
             lateral (select greatest(0, least($6::int, $4::int - live.total))::int as n) as g,
             lateral (select array_agg(s order by s) as seconds, array_agg(c order by s) as counts
                        from (select s, sum(c)::int as c
                                from (select s, c from unnest(live.seconds, live.counts) as u(s, c)
                                      union all select $2::bigint, g.n) as added
                               group by s) as merged) as grown)
    returning "granted", "seconds", "counts"`;
}

interface Waiter {
  rule: SlidingWindowRule;
  resolve(decision: SlidingWindowDecision): void;
  reject(error: unknown): void;
}

export function createSlidingWindowLimiter({ db, table, now = () => new Date() }: SlidingWindowOptions): SlidingWindowLimiter {
  const sqlName = `"${table.name}"`;
  const hitName = `meshwork_window_hit_${table.name}`;
  const hitSql = hitStatement(sqlName);
  const pruneName = `meshwork_window_prune_${table.name}`;
  const pruneSql = `delete from ${sqlName} where "expires_at" <= $1`;
  let lastPrune = 0;
  /** Per key digest: the hits waiting for the statement under way. */
  const queues = new Map<string, Waiter[]>();

  /** Counts `batch` (hits of one key under one rule, in arrival order) with one statement. */
  async function count(digest: string, rule: SlidingWindowRule, batch: Waiter[]): Promise<void> {
    const at = now();
    const atMs = at.getTime();
    const windowMs = rule.windowSeconds * 1000;
    const [row] = await db.reads.statement<HitRow>(hitName, hitSql, [
      digest,
      Math.floor(atMs / 1000),
      (atMs - windowMs) / 1000,
      rule.limit,
      new Date(atMs + windowMs),
      batch.length,
    ]);
    if (atMs - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = atMs;
      await db.reads.statement(pruneName, pruneSql, [at]);
    }
    let size = 0;
    for (const hits of row?.counts ?? []) size += hits;
    const granted = rule.limit > 0 ? Number(row?.granted ?? 0) : 0;
    const before = size - granted;
    const oldest = row?.seconds.length ? Number(row.seconds[0]) * 1000 : atMs;
    const freesAt = oldest + windowMs;
    const resetAt = Math.ceil(freesAt / 1000);
    const retryAfterSeconds = Math.max(1, Math.ceil((freesAt - atMs) / 1000));
    batch.forEach((waiter, i) => {
      const allowed = i < granted;
      waiter.resolve({
        allowed,
        limit: rule.limit,
        remaining: allowed ? Math.max(0, rule.limit - (before + i + 1)) : 0,
        resetAt,
        retryAfterSeconds,
      });
    });
  }

  /** Runs the key's statements one after the other while hits wait; each takes every waiting hit of one rule. */
  async function drain(digest: string, queue: Waiter[]): Promise<void> {
    while (queue.length > 0) {
      const { limit, windowSeconds } = queue[0]!.rule;
      let n = 1;
      while (n < queue.length && queue[n]!.rule.limit === limit && queue[n]!.rule.windowSeconds === windowSeconds) n++;
      const batch = queue.splice(0, n);
      try {
        await count(digest, batch[0]!.rule, batch);
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
    }
    queues.delete(digest);
  }

  return {
    hit(key, rule) {
      const digest = digestKey(key);
      return new Promise<SlidingWindowDecision>((resolve, reject) => {
        const waiting = queues.get(digest);
        if (waiting) {
          waiting.push({ rule, resolve, reject });
          return;
        }
        const queue: Waiter[] = [{ rule, resolve, reject }];
        queues.set(digest, queue);
        void drain(digest, queue);
      });
    },
  };
}
