// Rate limits kept in PostgreSQL, so every instance and every restart counts the same hits: a
// fixed window per (key, window start), counted with one upsert and compared with the limit in
// force at the time of the hit (a changed limit applies at once to the window already counted).
// Keys are stored as SHA-256 digests: an e-mail or an address used as a key is not kept in clear.
import { createHash } from "node:crypto";
import type { Database } from "../database/index.js";
import type { RateLimitTable } from "./rate-limit-table.js";

export interface RateLimitRule {
  /** Hits allowed per window. */
  limit: number;
  windowSeconds: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** Hits in the current window, this one included. */
  hits: number;
  /** Seconds until the window ends (at least 1): the Retry-After of a refusal. */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /** Counts a hit on `key` and says whether it is within `rule`. */
  hit(key: string, rule: RateLimitRule): Promise<RateLimitDecision>;
  /** The current window's count without counting a hit. */
  peek(key: string, rule: RateLimitRule): Promise<RateLimitDecision>;
  /** Forgets every window of `key` (e.g. failures after a success). */
  reset(key: string): Promise<void>;
}

export interface RateLimiterOptions {
  db: Pick<Database, "em">;
  table: RateLimitTable;
  now?: () => Date;
}

const PRUNE_EVERY_MS = 60_000;

export function digestKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The window `at` falls in: windows are aligned on the epoch, so every instance agrees on them. */
export function windowOf(at: Date, windowSeconds: number): { start: Date; end: Date } {
  const size = windowSeconds * 1000;
  const start = Math.floor(at.getTime() / size) * size;
  return { start: new Date(start), end: new Date(start + size) };
}

function decide(hits: number, rule: RateLimitRule, at: Date, end: Date): RateLimitDecision {
  return { allowed: hits <= rule.limit, hits, retryAfterSeconds: Math.max(1, Math.ceil((end.getTime() - at.getTime()) / 1000)) };
}

export function createRateLimiter({ db, table, now = () => new Date() }: RateLimiterOptions): RateLimiter {
  const sqlName = `"${table.name}"`;
  let lastPrune = 0;

  async function prune(at: Date): Promise<void> {
    if (at.getTime() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = at.getTime();
    await db.em().getConnection().execute(`delete from ${sqlName} where "expires_at" <= ?`, [at]);
  }

  return {
    async hit(key, rule) {
      const at = now();
      const { start, end } = windowOf(at, rule.windowSeconds);
      const rows = await db
        .em()
        .getConnection()
        .execute<{ hits: number }[]>(
          `insert into ${sqlName} ("key", "window_start", "hits", "expires_at") values (?, ?, 1, ?)
           on conflict ("key", "window_start") do update set "hits" = ${sqlName}."hits" + 1
           returning "hits"`,
          [digestKey(key), start, end],
        );
      await prune(at);
      return decide(Number(rows[0]?.hits ?? 1), rule, at, end);
    },

    async peek(key, rule) {
      const at = now();
      const { start, end } = windowOf(at, rule.windowSeconds);
      const rows = await db
        .em()
        .getConnection()
        .execute<{ hits: number }[]>(`select "hits" from ${sqlName} where "key" = ? and "window_start" = ?`, [digestKey(key), start]);
      return decide(Number(rows[0]?.hits ?? 0), rule, at, end);
    },

    async reset(key) {
      await db
        .em()
        .getConnection()
        .execute(`delete from ${sqlName} where "key" = ?`, [digestKey(key)]);
    },
  };
}
