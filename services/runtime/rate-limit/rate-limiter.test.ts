// The shared rate limiter on a database (embedded, or the real PostgreSQL when configured): counts
// per key and window, the limit in force decides, two limiters on one table share their counts.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { realInfra } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { openDatabase } from "../database/index.js";
import { createRateLimiter, rateLimitTable, windowOf } from "./index.js";

const table = rateLimitTable("ratetest_rate_limit");

async function database(t: ExecutionContext) {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-rate-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  const infra = realInfra();
  if (infra.databaseUrl) {
    const created = await createTestDatabaseUrl(infra.databaseUrl);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({
    url,
    dataDir,
    modules: [{ name: "ratetest", entities: [], migrations: [{ name: "ratetest-0001", class: table.migrations[0]! }] }],
    logger: testLogger("rate-limit"),
  });
  t.teardown(() => db.close());
  return db;
}

test("windows are aligned on the epoch, so every instance agrees on them", (t) => {
  const at = new Date("2026-01-01T00:07:30Z");
  t.deepEqual(windowOf(at, 900), { start: new Date("2026-01-01T00:00:00Z"), end: new Date("2026-01-01T00:15:00Z") });
  t.deepEqual(windowOf(at, 60).start, new Date("2026-01-01T00:07:00Z"));
});

test("hits are counted per key and window in PostgreSQL; two limiters share them", async (t) => {
  const db = await database(t);
  let now = new Date("2026-01-01T00:00:10Z");
  const clock = () => now;
  const one = createRateLimiter({ db, table, now: clock });
  const two = createRateLimiter({ db, table, now: clock });
  const rule = { limit: 3, windowSeconds: 60 };

  t.like(await one.hit("k", rule), { allowed: true, hits: 1, retryAfterSeconds: 50 });
  t.like(await two.hit("k", rule), { allowed: true, hits: 2 });
  t.like(await one.hit("k", rule), { allowed: true, hits: 3 });
  t.like(await two.hit("k", rule), { allowed: false, hits: 4, retryAfterSeconds: 50 });
  t.like(await one.hit("other", rule), { allowed: true, hits: 1 }, "keys are apart");
  t.like(await one.peek("k", rule), { allowed: false, hits: 4 }, "peek counts nothing");
  t.like(await one.hit("k", { ...rule, limit: 10 }), { allowed: true, hits: 5 }, "the limit in force decides");

  now = new Date("2026-01-01T00:01:00Z");
  t.like(await two.hit("k", rule), { allowed: true, hits: 1, retryAfterSeconds: 60 }, "a new window starts from zero");
  await one.reset("k");
  t.like(await two.peek("k", rule), { hits: 0 });

  const stored = await db.em().getConnection().execute<{ key: string }[]>(`select "key" from "ratetest_rate_limit"`);
  t.true(stored.length > 0);
  t.true(
    stored.every((row) => /^[0-9a-f]{64}$/.test(row.key)),
    "keys are kept as digests",
  );
});

test("concurrent hits are all counted", async (t) => {
  const db = await database(t);
  const limiter = createRateLimiter({ db, table });
  const rule = { limit: 5, windowSeconds: 3600 };
  const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.hit("burst", rule)));
  t.deepEqual(
    decisions.map((d) => d.hits).sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  t.is(decisions.filter((d) => d.allowed).length, 5);
});

test("a table name must be a plain SQL name", (t) => {
  t.throws(() => rateLimitTable('bad"name'), { message: /lower-case SQL name/ });
});
