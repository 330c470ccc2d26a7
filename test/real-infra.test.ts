// The switch between embedded and real infrastructure: the real-infrastructure CI pass
// (MESHWORK_REQUIRE_REAL_INFRA=1) fails when a server is missing or does not answer, instead of
// running the suites embedded and reporting green.
import test, { type TestFn } from "ava";
import { connect } from "nats";
import pg from "pg";
import { redactUrl } from "../services/runtime/database/index.js";
import { realInfra, realServers } from "./support/real-infra.js";

/** A stand-in for ava's `test` that records the titles registered through it. */
function recorder(): { test: TestFn; titles: string[] } {
  const titles: string[] = [];
  return { test: ((title: string) => titles.push(title)) as unknown as TestFn, titles };
}

test("tests that need a server not configured are left out on the embedded defaults", (t) => {
  const { test: register, titles } = recorder();
  t.is(realServers(register, "shared stream", ["postgres", "nats"], { NATS_URL: "nats://127.0.0.1:4222" }), undefined);
  t.deepEqual(titles, []);
});

test("when real infrastructure is required, a missing server becomes a test that names it", (t) => {
  const { test: register, titles } = recorder();
  const env = { MESHWORK_REQUIRE_REAL_INFRA: "1", NATS_URL: "nats://127.0.0.1:4222" };
  t.is(realServers(register, "shared stream", ["postgres", "nats"], env), undefined);
  t.deepEqual(titles, ["shared stream: needs PostgreSQL (DATABASE_URL)"]);
});

test("configured servers are answered, and no stand-in test is registered", (t) => {
  const { test: register, titles } = recorder();
  const env = { MESHWORK_REQUIRE_REAL_INFRA: "1", DATABASE_URL: "postgres://db.internal/x", NATS_URL: "nats://bus.internal:4222" };
  t.deepEqual(realServers(register, "shared stream", ["postgres", "nats"], env), {
    databaseUrl: "postgres://db.internal/x",
    natsUrl: "nats://bus.internal:4222",
  });
  t.deepEqual(titles, []);
});

test("MESHWORK_TEST_REAL=1 picks the local servers for whichever URL is unset", (t) => {
  t.deepEqual(realInfra({ MESHWORK_TEST_REAL: "1", NATS_URL: "nats://bus.internal:4222" }), {
    databaseUrl: "postgres://postgres@127.0.0.1:5432/postgres",
    natsUrl: "nats://bus.internal:4222",
  });
  t.deepEqual(realInfra({ MESHWORK_TEST_REAL: "0" }), {});
});

const postgres = realServers(test, "PostgreSQL answers", ["postgres"]);
if (postgres) {
  test("PostgreSQL answers", async (t) => {
    const url = postgres.databaseUrl!;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    try {
      await client.connect();
      const { rows } = await client.query<{ one: number }>("select 1 as one");
      t.is(rows[0]?.one, 1);
    } catch (err) {
      t.fail(`PostgreSQL at ${redactUrl(url)} (DATABASE_URL) does not answer: ${(err as Error).message}`);
    } finally {
      await client.end().catch(() => {});
    }
  });
}

const nats = realServers(test, "NATS answers", ["nats"]);
if (nats) {
  test("NATS answers, with JetStream enabled", async (t) => {
    const url = nats.natsUrl!;
    try {
      const nc = await connect({ servers: url, timeout: 10_000 });
      t.teardown(() => nc.close());
      const info = await (await nc.jetstreamManager()).getAccountInfo();
      t.true(info.limits !== undefined);
    } catch (err) {
      t.fail(`NATS at ${url} (NATS_URL) does not answer with JetStream: ${(err as Error).message}`);
    }
  });
}
