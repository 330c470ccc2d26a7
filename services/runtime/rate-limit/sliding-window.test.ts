// The sliding window on a database (embedded, or the real PostgreSQL when configured): a refused
// request is not counted, a slot frees a window after the hit that took it, two limiters share.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { realInfra } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { openDatabase } from "../database/index.js";
import { createSlidingWindowLimiter, slidingWindowTable } from "./index.js";

const table = slidingWindowTable("slidetest_window");

async function database(t: ExecutionContext) {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-slide-"));
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
    modules: [
      {
        name: "slidetest",
        entities: [],
        migrations: table.migrations.map((migration, i) => ({ name: `slidetest-000${i + 1}`, class: migration })),
      },
    ],
    logger: testLogger("sliding-window"),
  });
  t.teardown(() => db.close());
  return db;
}

test.serial("a window slides with the hits: refusals are not counted, a slot frees 60 s after the hit that took it", async (t) => {
  const db = await database(t);
  let now = new Date("2026-01-01T00:00:10.000Z");
  const clock = () => now;
  const one = createSlidingWindowLimiter({ db, table, now: clock });
  const two = createSlidingWindowLimiter({ db, table, now: clock });
  const rule = { limit: 3, windowSeconds: 60 };
  const t0 = Date.parse("2026-01-01T00:00:10.000Z") / 1000;
  t.deepEqual(await one.hit("k", rule), { allowed: true, limit: 3, remaining: 2, resetAt: t0 + 60, retryAfterSeconds: 60 });
  now = new Date("2026-01-01T00:00:20.000Z");
  t.like(await two.hit("k", rule), { allowed: true, remaining: 1, resetAt: t0 + 60 }, "the reset is the oldest hit's");
  now = new Date("2026-01-01T00:00:30.000Z");
  t.like(await one.hit("k", rule), { allowed: true, remaining: 0 });
  now = new Date("2026-01-01T00:00:40.000Z");
  t.like(await two.hit("k", rule), { allowed: false, remaining: 0, retryAfterSeconds: 30 });
  now = new Date("2026-01-01T00:01:09.500Z");
  t.like(await one.hit("k", rule), { allowed: false, retryAfterSeconds: 1 }, "refused again: the refusals took no slot");
  t.like(await one.hit("other", rule), { allowed: true, remaining: 2 }, "keys are apart");
  now = new Date("2026-01-01T00:01:10.001Z");
  // The first hit left the window (a fixed window would still be full until 00:02:00).
  t.like(await two.hit("k", rule), { allowed: true, remaining: 0, resetAt: t0 + 70 });
  t.like(await one.hit("k", { ...rule, limit: 5 }), { allowed: true, remaining: 1 }, "the limit in force decides");
  const stored = await db
    .em()
    .getConnection()
    .execute<{ key: string; counts: number[] }[]>(`select "key", "counts" from "slidetest_window"`);
  t.deepEqual(stored.map((row) => row.counts.length).sort(), [1, 3], "one count per second of the window, not a row entry per hit");
  t.true(
    stored.every((row) => /^[0-9a-f]{64}$/.test(row.key)),
    "keys are kept as digests",
  );
});

test.serial("concurrent hits from several limiters never exceed the limit", async (t) => {
  const db = await database(t);
  const limiters = [createSlidingWindowLimiter({ db, table }), createSlidingWindowLimiter({ db, table })];
  const rule = { limit: 5, windowSeconds: 60 };
  const decisions = await Promise.all(Array.from({ length: 12 }, (_, i) => limiters[i % 2]!.hit("burst", rule)));
  t.is(decisions.filter((d) => d.allowed).length, 5);
  t.deepEqual(
    decisions
      .filter((d) => d.allowed)
      .map((d) => d.remaining)
      .sort(),
    [0, 1, 2, 3, 4],
  );
});

test.serial("hits are counted per second: a second's hits leave the window together, at most a second early", async (t) => {
  const db = await database(t);
  let now = new Date("2026-01-01T00:00:10.900Z");
  const limiter = createSlidingWindowLimiter({ db, table, now: () => now });
  const rule = { limit: 2, windowSeconds: 60 };
  const t0 = Date.parse("2026-01-01T00:00:10.000Z") / 1000;
  t.like(await limiter.hit("k", rule), { allowed: true, remaining: 1, resetAt: t0 + 60, retryAfterSeconds: 60 });
  now = new Date("2026-01-01T00:00:10.950Z");
  t.like(await limiter.hit("k", rule), { allowed: true, remaining: 0, resetAt: t0 + 60 });
  now = new Date("2026-01-01T00:01:09.999Z");
  t.like(await limiter.hit("k", rule), { allowed: false, remaining: 0, retryAfterSeconds: 1 });
  now = new Date("2026-01-01T00:01:10.000Z");
  t.like(await limiter.hit("k", rule), { allowed: true, remaining: 1, resetAt: t0 + 120 }, "both hits of second 10 left at 70.000");
  const [row] = await db.em().getConnection().execute<{ counts: number[] }[]>(`select "counts" from "slidetest_window"`);
  t.deepEqual(row?.counts, [1]);
});

test.serial("hits that arrive while the key's statement is under way are counted together, in their order", async (t) => {
  const db = await database(t);
  let statements = 0;
  const counting = {
    reads: {
      ...db.reads,
      statement: <Row extends object>(name: string, text: string, values: unknown[]) => {
        if (name.startsWith("meshwork_window_hit_")) statements++;
        return db.reads.statement<Row>(name, text, values);
      },
    },
  };
  const limiter = createSlidingWindowLimiter({ db: counting, table });
  const rule = { limit: 15, windowSeconds: 60 };
  const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.hit("together", rule)));
  t.deepEqual(
    decisions.map((d) => (d.allowed ? d.remaining : "refused")),
    [14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, "refused", "refused", "refused", "refused", "refused"],
  );
  t.is(statements, 2, "the first hit alone, then the 19 that waited for it in one statement");
  t.like(await limiter.hit("together", rule), { allowed: false, remaining: 0 }, "the refusals took no slot, the window is full");
  t.like(await limiter.hit("apart", rule), { allowed: true, remaining: 14 });
});
