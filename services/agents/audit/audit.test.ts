// The audit ring through the agent front's REST, end to end: every filter of GET /api/audit/events
// (and the 400 naming a bad one), one entry by id, the stats, the /api/v1 forms; the ring dropping
// its oldest entries at capacity, also under concurrent writers; entries kept across a restart;
// two meshes on one PostgreSQL sharing one ring.
import test from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realInfra, realServers } from "../../../test/support/real-infra.js";
import { sendJson } from "../../../test/support/rest.js";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { type AuditRing, createAuditRing } from "./audit-ring.js";
import type { AuditEntry } from "./types.js";
import { runAsCaller } from "../../runtime/auth/identity.js";

interface ErrorBody {
  error: string;
  message: string;
}

interface WireEvent {
  eventId: string;
  timestamp: string;
  userId: string | null;
  sessionId: string | null;
  traceId: string | null;
  action: string;
  resource: string | null;
  detail: Record<string, unknown>;
  severity: string;
  policyResult: string | null;
}

interface Page {
  totalCount: number;
  count: number;
  events: WireEvent[];
}

interface Stats {
  totalEvents: number;
  bySeverity: Record<string, number>;
  topActions: { action: string; count: number }[];
}

const SESSION_A = "0f6b1c3e-1111-4c2d-8e9f-000000000001";
const SESSION_B = "0f6b1c3e-2222-4c2d-8e9f-000000000002";

// Oldest first, as they are recorded.
const entries: AuditEntry[] = [
  { action: "session.create", severity: "info", sessionId: SESSION_A, userId: "alice", resource: "agent-1" },
  {
    action: "tool.invoke",
    severity: "info",
    sessionId: SESSION_A,
    userId: "alice",
    resource: "think",
    policyResult: "ok",
    detail: { status: "ok", alias: "think", canonical: "think", arguments: { thought: "hmm" } },
  },
  {
    action: "tool.invoke",
    severity: "warning",
    sessionId: SESSION_A,
    resource: "rm",
    policyResult: "denied",
    detail: { status: "denied" },
  },
  { action: "auth.failed", severity: "warning", resource: "/api/agents", traceId: "4bf92f3577b34da6a3ce929d0e0e4736" },
  { action: "policy.deny", severity: "error", sessionId: SESSION_B, userId: "bob", resource: "shell" },
  { action: "agent.stop", severity: "critical", userId: "bob", resource: "agent-2", detail: { reason: "idle", nested: { n: [1, 2] } } },
  { action: "tool.invoke", severity: "debug", sessionId: SESSION_B, resource: "think", policyResult: "user_denied" },
];

let mesh: TestMesh;
let api: string;
let ring: AuditRing;
let recordedAt: { before: Date; after: Date }[] = [];

test.before(async () => {
  mesh = await startTestMesh();
  api = `${mesh.frontUrl("agents")}/api`;
  ring = createAuditRing({ capacity: 10_000 });
  recordedAt = [];
  for (const entry of entries) {
    const before = new Date();
    await ring.record(mesh.db!.em(), entry);
    recordedAt.push({ before, after: new Date() });
    // Each entry in a millisecond of its own, so from/until (millisecond timestamps) can tell them apart.
    await nextMillisecond();
  }
});
test.after.always(() => mesh?.close());

async function nextMillisecond(): Promise<void> {
  const now = Date.now();
  while (Date.now() <= now) await new Promise((resolve) => setImmediate(resolve));
}

const list = (query = "") => sendJson<Page>(`${api}/audit/events${query}`, "GET");
const actionsOf = (page: Page) => page.events.map((e) => `${e.action}:${e.resource}`);
const newestFirst = [...entries].reverse().map((e) => `${e.action}:${e.resource}`);

test.serial("GET /api/audit/events answers every entry newest first, every property present", async (t) => {
  const res = await list();
  t.is(res.status, 200);
  t.is(res.body.totalCount, entries.length);
  t.is(res.body.count, entries.length);
  t.deepEqual(actionsOf(res.body), newestFirst);
  const newest = res.body.events[0]!;
  t.deepEqual(Object.keys(newest).sort(), [
    "action",
    "detail",
    "eventId",
    "policyResult",
    "resource",
    "sessionId",
    "severity",
    "timestamp",
    "traceId",
    "userId",
  ]);
  t.like(newest, { action: "tool.invoke", severity: "debug", sessionId: SESSION_B, userId: null, policyResult: "user_denied", detail: {} });
  t.regex(newest.eventId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.regex(newest.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  const stop = res.body.events.find((e) => e.action === "agent.stop")!;
  t.deepEqual(stop.detail, { reason: "idle", nested: { n: [1, 2] } }, "detail is the JSON object recorded");
  const failed = res.body.events.find((e) => e.action === "auth.failed")!;
  t.is(failed.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
  const v1 = await sendJson<Page>(`${api}/v1/audit/events`, "GET");
  t.is(v1.status, 200);
  t.deepEqual(v1.body, res.body, "/api/v1/audit/events is the same");
});

test.serial("each filter narrows the ring, and they combine", async (t) => {
  const cases: [string, string[]][] = [
    ["?action=tool.invoke", ["tool.invoke:think", "tool.invoke:rm", "tool.invoke:think"]],
    ["?severity=warning", ["agent.stop:agent-2", "policy.deny:shell", "auth.failed:/api/agents", "tool.invoke:rm"]],
    ["?severity=ERROR", ["agent.stop:agent-2", "policy.deny:shell"]],
    ["?severity=critical", ["agent.stop:agent-2"]],
    ["?severity=debug", newestFirst],
    [`?sessionId=${SESSION_A}`, ["tool.invoke:rm", "tool.invoke:think", "session.create:agent-1"]],
    [`?sessionId=${SESSION_B.toUpperCase()}`, ["tool.invoke:think", "policy.deny:shell"]],
    ["?userId=bob", ["agent.stop:agent-2", "policy.deny:shell"]],
    ["?resource=think", ["tool.invoke:think", "tool.invoke:think"]],
    [`?action=tool.invoke&sessionId=${SESSION_A}&severity=info`, ["tool.invoke:rm", "tool.invoke:think"]],
    ["?action=nothing.like.this", []],
    ["?action=", newestFirst],
  ];
  for (const [query, expected] of cases) {
    const res = await list(query);
    t.is(res.status, 200, query);
    t.deepEqual(actionsOf(res.body), expected, query);
    t.is(res.body.totalCount, expected.length, query);
  }
});

test.serial("from and until bound the timestamp, both inclusive", async (t) => {
  const all = (await list()).body.events;
  const byAction = (a: string) => all.find((e) => e.action === a)!;
  const from = byAction("auth.failed").timestamp;
  const until = byAction("agent.stop").timestamp;
  const res = await list(`?from=${encodeURIComponent(from)}&until=${encodeURIComponent(until)}`);
  t.deepEqual(actionsOf(res.body), ["agent.stop:agent-2", "policy.deny:shell", "auth.failed:/api/agents"]);
  const later = await list(`?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
  t.deepEqual(later.body, { totalCount: 0, count: 0, events: [] });
  const earlier = await list(`?until=${encodeURIComponent(new Date(recordedAt[0]!.before.getTime() - 1000).toISOString())}`);
  t.is(earlier.body.totalCount, 0, "nothing was recorded before the first entry");
  const open = await list(`?from=${encodeURIComponent(new Date(recordedAt[0]!.before.getTime() - 1000).toISOString())}`);
  t.is(open.body.totalCount, entries.length);
});

test.serial("limit and offset page through the ring; totalCount counts every match", async (t) => {
  const first = await list("?limit=3");
  t.is(first.body.totalCount, entries.length);
  t.is(first.body.count, 3);
  t.deepEqual(actionsOf(first.body), newestFirst.slice(0, 3));
  const second = await list("?limit=3&offset=3");
  t.deepEqual(actionsOf(second.body), newestFirst.slice(3, 6));
  const past = await list("?limit=3&offset=100");
  t.deepEqual(past.body, { totalCount: entries.length, count: 0, events: [] });
  t.is((await list("?limit=1000")).body.count, entries.length, "1000 is allowed");
  t.is((await list("?limit=1")).body.count, 1, "1 is allowed");
});

test.serial("a filter that cannot be read answers 400 naming it", async (t) => {
  const cases: [string, RegExp][] = [
    ["?severity=loud", /severity/],
    ["?sessionId=not-a-uuid", /sessionId/],
    ["?limit=0", /limit/],
    ["?limit=1001", /limit/],
    ["?limit=-5", /limit/],
    ["?limit=ten", /limit/],
    ["?offset=-1", /offset/],
    ["?offset=x", /offset/],
    ["?from=yesterday", /from/],
    ["?until=2026-13-40T00:00:00Z", /until/],
    ["?from=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", /until/],
    ["?colour=red", /colour/],
  ];
  for (const [query, named] of cases) {
    const res = await sendJson<ErrorBody>(`${api}/audit/events${query}`, "GET");
    t.is(res.status, 400, query);
    t.is(typeof res.body.error, "string", query);
    t.regex(res.body.message, named, query);
  }
});

test.serial("GET /api/audit/events/{id}: the entry; 404 unknown, 400 malformed", async (t) => {
  const [newest] = (await list("?limit=1")).body.events;
  for (const path of [`/audit/events/${newest!.eventId}`, `/v1/audit/events/${newest!.eventId.toUpperCase()}`]) {
    const res = await sendJson<WireEvent>(`${api}${path}`, "GET");
    t.is(res.status, 200, path);
    t.deepEqual(res.body, newest, path);
  }
  const unknown = await sendJson<ErrorBody>(`${api}/audit/events/00000000-0000-4000-8000-000000000000`, "GET");
  t.is(unknown.status, 404);
  t.regex(unknown.body.message, /00000000-0000-4000-8000-000000000000/);
  const malformed = await sendJson<ErrorBody>(`${api}/audit/events/nope`, "GET");
  t.is(malformed.status, 400);
  t.regex(malformed.body.message, /id/);
});

test.serial("GET /api/audit/stats counts the whole ring by severity and its top actions", async (t) => {
  for (const path of ["/audit/stats", "/v1/audit/stats"]) {
    const res = await sendJson<Stats>(`${api}${path}`, "GET");
    t.is(res.status, 200, path);
    t.deepEqual(res.body, {
      totalEvents: entries.length,
      bySeverity: { debug: 1, info: 2, warning: 2, error: 1, critical: 1 },
      topActions: [
        { action: "tool.invoke", count: 3 },
        { action: "agent.stop", count: 1 },
        { action: "auth.failed", count: 1 },
        { action: "policy.deny", count: 1 },
        { action: "session.create", count: 1 },
      ],
    });
  }
});

// The two below write to the shared mesh's ring, so they run after every test that counts it.
test.serial("text PostgreSQL cannot store is replaced, never refused: an audit write does not fail its work", async (t) => {
  await ring.record(mesh.db!.em(), {
    action: "odd.text",
    severity: "info",
    resource: "bad\u0000tool",
    detail: { "key\u0000": "half \ud800 pair", big: 12345678901234567890n as unknown as number },
  });
  const [event] = (await list("?action=odd.text")).body.events;
  t.is(event!.resource, "bad\uFFFDtool");
  t.deepEqual(event!.detail, { "key\uFFFD": "half \uFFFD pair", big: "12345678901234567890" });
});

test.serial("a rolled-back transaction leaves no entry", async (t) => {
  await t.throwsAsync(
    mesh.db!.em().transactional(async (em) => {
      await ring.record(em, { action: "never.happened", severity: "info" });
      throw new Error("the work failed");
    }),
    { message: "the work failed" },
  );
  await ring.record(mesh.db!.em(), { action: "happened", severity: "info" });
  t.is((await list("?action=never.happened")).body.totalCount, 0);
  t.is((await list("?action=happened")).body.totalCount, 1);
});

test.serial("an entry without a userId takes the API key Name of the caller being handled, never the key", async (t) => {
  const caller = { identity: { authenticated: true, name: "ops-console", role: "Operator", scheme: "api-key" as const } };
  await runAsCaller(caller, () => ring.record(mesh.db!.em(), { action: "channel.connect", severity: "info", resource: "by-key" }));
  await runAsCaller(caller, () =>
    ring.record(mesh.db!.em(), { action: "channel.connect", severity: "info", resource: "by-key", userId: "named-by-writer" }),
  );
  await ring.record(mesh.db!.em(), { action: "channel.connect", severity: "info", resource: "by-key" });
  const page = (await list("?resource=by-key")).body;
  t.deepEqual(
    page.events.map((e) => e.userId),
    [null, "named-by-writer", "ops-console"],
  );
  t.is((await list("?userId=ops-console")).body.totalCount, 1);
});

test.serial("the ring keeps the newest `capacity` entries, dropping the oldest, also with concurrent writers", async (t) => {
  const fresh = await startTestMesh();
  t.teardown(() => fresh.close());
  const url = `${fresh.frontUrl("agents")}/api/audit`;
  // The mesh's own ring reads the table; a ring of 5 writes it, as an instance with
  // AgentGateway:AuditCapacity=5 would.
  const small = createAuditRing({ capacity: 5 });
  const physicalRows = async () =>
    Number((await fresh.db!.em().getConnection().execute<{ n: string }[]>(`select count(*) as "n" from "agents_audit_event"`))[0]!.n);
  await small.record(fresh.db!.em(), { action: "step.1", severity: "info" });
  const oldest = (await sendJson<Page>(`${url}/events`, "GET")).body.events[0]!;
  t.is(oldest.action, "step.1");
  for (let i = 2; i <= 12; i++) await small.record(fresh.db!.em(), { action: `step.${i}`, severity: "info" });
  const page = (await sendJson<Page>(`${url}/events`, "GET")).body;
  t.is(page.totalCount, 5);
  t.deepEqual(
    page.events.map((e) => e.action),
    ["step.12", "step.11", "step.10", "step.9", "step.8"],
  );
  t.is(await physicalRows(), 5, "the dropped rows are gone from the table");
  t.is((await sendJson<Stats>(`${url}/stats`, "GET")).body.totalEvents, 5);
  const gone = await sendJson<ErrorBody>(`${url}/events/${oldest.eventId}`, "GET");
  t.is(gone.status, 404, "an entry dropped from the ring is not found");

  // Forty writers at once, each in its own transaction.
  await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      fresh.db!.em().transactional((em) => small.record(em, { action: `burst.${i}`, severity: "warning" })),
    ),
  );
  // Read through a ring of the same capacity (the REST service's ring here is 10000 wide): a row a
  // concurrent writer's trim could not see yet is never shown.
  const burst = await small.query(fresh.db!.em(), {}, 1000, 0);
  t.is(burst.totalCount, 5, "the ring never shows more than its capacity");
  t.is(burst.events.length, 5);
  t.true(burst.events.every((e) => e.action.startsWith("burst.")));
  await small.record(fresh.db!.em(), { action: "after", severity: "info" });
  t.is(await physicalRows(), 5, "the next write trims whatever a concurrent writer left");
  t.is((await sendJson<Page>(`${url}/events?limit=1000`, "GET")).body.totalCount, 5);
  t.is((await sendJson<Page>(`${url}/events?limit=1`, "GET")).body.events[0]!.action, "after");

  // A batch in one statement: its rows in order, the ring trimmed once to its capacity.
  await small.recordMany!(
    fresh.db!.em(),
    Array.from({ length: 7 }, (_, i) => ({ action: `batch.${i}`, severity: "info" as const, detail: { i } })),
  );
  const batched = await small.query(fresh.db!.em(), {}, 1000, 0);
  t.deepEqual(
    batched.events.map((e) => e.action),
    ["batch.6", "batch.5", "batch.4", "batch.3", "batch.2"],
  );
  t.deepEqual(batched.events[0]!.detail, { i: 6 });
  t.is(await physicalRows(), 5);
  await t.throwsAsync(small.recordMany!(fresh.db!.em(), [{ action: "x", severity: "loud" as never }]), {
    message: /unknown audit severity/,
  });
  await small.recordMany!(fresh.db!.em(), []);
  t.is(await physicalRows(), 5, "an empty batch writes nothing");
});

test.serial("entries are kept across a restart", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-audit-restart-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const first = await startTestMesh({ dataDir, databaseUrl: db?.url });
  await ring.record(first.db!.em(), { action: "before.restart", severity: "info" });
  await first.close();
  const second = await startTestMesh({ dataDir, databaseUrl: db?.url });
  t.teardown(() => second.close());
  const page = (await sendJson<Page>(`${second.frontUrl("agents")}/api/audit/events?action=before.restart`, "GET")).body;
  t.is(page.totalCount, 1);
});

if (realServers(test, "the audit ring on two meshes sharing PostgreSQL", ["postgres", "nats"])) {
  test.serial("two meshes on one PostgreSQL + NATS see one ring", async (t) => {
    const a = await startTestMesh();
    // B shares A's database (A drops it at close, so B closes first).
    const b = await startTestMesh({ databaseUrl: a.config.runtime.database.url });
    t.teardown(async () => {
      await b.close();
      await a.close();
    });
    const small = createAuditRing({ capacity: 6 });
    // Both instances write at once; either answers the same ring.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        small.record((i % 2 ? a : b).db!.em(), { action: `from.${i % 2 ? "a" : "b"}`, severity: "info" }),
      ),
    );
    await small.record(a.db!.em(), { action: "last", severity: "error" });
    const onA = (await sendJson<Page>(`${a.frontUrl("agents")}/api/audit/events`, "GET")).body;
    const onB = (await sendJson<Page>(`${b.frontUrl("agents")}/api/audit/events`, "GET")).body;
    t.is(onA.totalCount, 6);
    t.deepEqual(onB, onA);
    t.is(onA.events[0]!.action, "last");
    const statsB = (await sendJson<Stats>(`${b.frontUrl("agents")}/api/audit/stats`, "GET")).body;
    t.is(statsB.totalEvents, 6);
    t.is(statsB.bySeverity.error, 1);
  });
}
