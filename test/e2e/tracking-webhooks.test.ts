// Durable signed webhooks end to end: a local receiver (node:http on 127.0.0.1) behind each mesh,
// every signature checked with the `standardwebhooks` package. Real alerts and test events,
// retries (500, 429 with Retry-After, giving up), 410 disabling an endpoint, a restart in the
// middle of a retry schedule, the SSRF guard, the delivery log, the status and the test endpoint.
// With NATS_URL set, each mesh's durables (named after its own database) are removed afterwards.
import test, { type ExecutionContext } from "ava";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "nats";
import { Webhook } from "standardwebhooks";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { realInfra, realServers } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until as poll } from "../support/until.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies read loosely in assertions
type Json = Record<string, any>;

const secret = `whsec_${randomBytes(24).toString("base64")}`;
const verifier = new Webhook(secret);

// ---------------------------------------------------------------------------------------------
// The receiver

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Receiver clock, ms. */
  at: number;
  /** The status this request was answered with. */
  status: number;
}

type Behaviour = (nth: number) => { status: number; headers?: Record<string, string>; delayMs?: number };

const okay: Behaviour = () => ({ status: 200 });

class Receiver {
  readonly requests: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const nth = this.requests.filter((r) => r.path === path).length + 1;
      const answer = (this.behaviours.get(path) ?? okay)(nth);
      this.requests.push({
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
        status: answer.status,
      });
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
        res.end("ok");
      }, answer.delayMs ?? 0);
    });
  });
  port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  on(path: string, behaviour: Behaviour): this {
    this.behaviours.set(path, behaviour);
    return this;
  }

  url(path: string, host = "127.0.0.1"): string {
    return `http://${host}:${this.port}${path}`;
  }

  at(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function startReceiver(t: ExecutionContext): Promise<Receiver> {
  const receiver = await new Receiver().start();
  t.teardown(() => receiver.close());
  return receiver;
}

// ---------------------------------------------------------------------------------------------
// Meshes

interface EndpointSpec {
  url: string;
  events?: string;
  secret?: string | null;
}

function endpointFlag(endpoints: EndpointSpec[]): string {
  const list = endpoints.map((e) => ({
    Url: e.url,
    ...(e.secret === null ? {} : { Secret: e.secret ?? secret }),
    ...(e.events ? { Events: e.events } : {}),
  }));
  return `--Webhooks:Endpoints=${JSON.stringify(list)}`;
}

/** Retries in milliseconds, not seconds, so schedules run out within a test. */
const quickRetries = ["--Webhooks:RetryInitialDelayMs=50", "--Webhooks:RetryMaxDelayMs=200", "--Webhooks:TimeoutSeconds=5"];

interface MeshOptions {
  endpoints: EndpointSpec[];
  flags?: string[];
  loopback?: boolean;
  dataDir?: string;
  databaseUrl?: string;
}

async function startWebhookMesh(t: ExecutionContext, options: MeshOptions): Promise<TestMesh> {
  const mesh = await startTestMesh({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    flags: [
      ...(options.endpoints.length ? [endpointFlag(options.endpoints)] : []),
      ...(options.loopback === false ? [] : ["--Webhooks:AllowLoopback=true"]),
      ...quickRetries,
      ...(options.flags ?? []),
    ],
  });
  const consumer = await consumerIdOf(mesh);
  let closed = false;
  const close = mesh.close.bind(mesh);
  mesh.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  t.teardown(async () => {
    await mesh.close();
    if (!options.databaseUrl) await dropDurables(consumer);
  });
  return mesh;
}

async function consumerIdOf(mesh: TestMesh): Promise<string> {
  const [row] = await mesh.db!.em().execute<{ consumer_id: string }[]>(`select "consumer_id" from "tracking_webhook_consumer"`);
  return row!.consumer_id;
}

/** On a shared NATS server a test's durables would outlive it; each is named after its database. */
async function dropDurables(consumerId: string): Promise<void> {
  const natsUrl = realInfra().natsUrl;
  if (!natsUrl) return;
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    const prefix = `tracking-webhooks-${consumerId.replace(/-/g, "").slice(0, 16)}-`;
    const names: string[] = [];
    for await (const info of jsm.consumers.list("TRACKING")) if (info.name.startsWith(prefix)) names.push(info.name);
    for (const name of names) await jsm.consumers.delete("TRACKING", name);
  } finally {
    await nc.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Calls and waits

async function call(mesh: TestMesh, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.headers = { "content-type": "application/json" };
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`${mesh.frontUrl("tracking")}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

async function ok(mesh: TestMesh, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await call(mesh, method, path, body);
  if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The shared poll with the 60 s these retry schedules need, named first as this file reads best. */
const until = <T>(what: string, probe: () => T | Promise<T>) => poll(probe, what, { timeoutMs: 60_000 });

async function attempts(mesh: TestMesh, query = ""): Promise<Json[]> {
  return (await ok(mesh, "GET", `/api/webhooks/deliveries?pageSize=200${query}`)).items as Json[];
}

async function fireTest(mesh: TestMesh, eventType?: string): Promise<Json> {
  const fired = await ok(mesh, "POST", "/api/webhooks/test", eventType ? { eventType } : {});
  if (!fired.fired) throw new Error(`test event not fired: ${JSON.stringify(fired)}`);
  return fired;
}

/** Verifies a request with the standardwebhooks package (throws on a bad signature) and parses it. */
function verified(r: Received): Json {
  return verifier.verify(r.body, r.headers as Record<string, string>) as Json;
}

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

// ---------------------------------------------------------------------------------------------

test.serial("a real speed alert and a real breach arrive signed, with the alert as the REST front shows it", async (t) => {
  const receiver = await startReceiver(t);
  const mesh = await startWebhookMesh(t, {
    endpoints: [{ url: receiver.url("/all") }, { url: receiver.url("/breaches"), events: "geofence_breach" }],
  });
  const asset = await ok(mesh, "POST", "/api/assets", { name: "van", speedThresholdKmh: 100 });
  const device = await ok(mesh, "POST", "/api/devices", { identifier: `wh-${randomUUID().slice(0, 8)}`, assetId: asset.id });
  const now = Date.now();
  await ok(mesh, "POST", "/api/observations", {
    deviceId: device.id,
    observedAt: new Date(now - 60_000).toISOString(),
    latitude: 51.6,
    longitude: -0.3,
    speedKmh: 150,
  });
  await ok(mesh, "POST", "/api/geofences", { name: "City", centerLatitude: 51.51, centerLongitude: -0.1, radiusMeters: 1000 });
  await ok(mesh, "POST", "/api/observations", {
    deviceId: device.id,
    observedAt: new Date(now - 30_000).toISOString(),
    latitude: 51.51,
    longitude: -0.1,
    speedKmh: 20,
  });

  await until("two deliveries to /all and one to /breaches", () => receiver.at("/all").length >= 2 && receiver.at("/breaches").length >= 1);
  const all = receiver.at("/all").map(verified);
  const speed = all.find((p) => p.type === "speed_alert");
  const breach = all.find((p) => p.type === "geofence_breach");
  t.truthy(speed, "a speed_alert delivery");
  t.truthy(breach, "a geofence_breach delivery");
  t.deepEqual(
    receiver.at("/breaches").map((r) => verified(r).type),
    ["geofence_breach"],
    "an endpoint gets only the types it lists",
  );
  t.regex(speed!.timestamp, iso);

  // data is exactly what the REST lists answer for the same alert.
  const alerts = await ok(mesh, "GET", `/api/speed-alerts?deviceId=${device.id}`);
  t.deepEqual(speed!.data, alerts.items[0]);
  const breaches = await ok(mesh, "GET", `/api/geofences/breaches?deviceId=${device.id}`);
  t.deepEqual(breach!.data, breaches.items[0]);
  t.is(breach!.data.breachEventType, "Enter");
  t.is(speed!.data.speedKmh, 150);

  for (const r of receiver.requests) {
    t.regex(String(r.headers["webhook-id"]), /^msg_[0-9a-f-]{36}$/);
    t.regex(String(r.headers["webhook-signature"]), /^v1,[A-Za-z0-9+/]+=*$/);
    t.is(r.headers["content-type"], "application/json");
  }
  const breachIds = new Set(
    receiver.requests.filter((r) => JSON.parse(r.body).type === "geofence_breach").map((r) => r.headers["webhook-id"]),
  );
  t.is(breachIds.size, 1, "one event has one webhook-id, whichever endpoint receives it");

  const logged = await until("three logged attempts", async () => {
    const items = await attempts(mesh);
    return items.length >= 3 && items;
  });
  t.true(logged.every((a) => a.success === true && a.httpStatusCode === 200 && a.attemptNumber === 1 && a.error === null));
  const distinct = (values: unknown[]) => [...new Set(values.map(String))].sort();
  t.deepEqual(distinct(logged.map((a) => a.correlationId)), distinct(receiver.requests.map((r) => r.headers["webhook-id"])));
  t.deepEqual(distinct(logged.map((a) => a.endpoint)), distinct([receiver.url("/all"), receiver.url("/breaches")]));
});

test.serial(
  "retries: 500 until success with one webhook-id, 429 waits for Retry-After, a timeout is retried, 503 gives up after MaxAttempts",
  async (t) => {
    const receiver = await startReceiver(t);
    receiver
      .on("/flaky", (n) => ({ status: n <= 2 ? 500 : 200 }))
      .on("/limited", (n) => (n === 1 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 }))
      .on("/down", () => ({ status: 503 }))
      // Answers the first request only after the 1 s timeout has given up on it.
      .on("/slow", (n) => ({ status: 200, delayMs: n === 1 ? 3_000 : 0 }));
    const mesh = await startWebhookMesh(t, {
      endpoints: [
        { url: receiver.url("/flaky") },
        { url: receiver.url("/limited") },
        { url: receiver.url("/down") },
        { url: receiver.url("/slow") },
      ],
      flags: ["--Webhooks:MaxAttempts=3", "--Webhooks:TimeoutSeconds=1"],
    });
    await fireTest(mesh);
    await until("every delivery finished", async () => {
      const status = await ok(mesh, "GET", "/api/webhooks/status");
      return receiver.requests.length >= 9 && status.retryQueueDepth === 0;
    });

    // 500, 500, 200: three attempts of one event, one webhook-id, each signed for its own timestamp.
    const flaky = receiver.at("/flaky");
    t.deepEqual(
      flaky.map((r) => r.status),
      [500, 500, 200],
    );
    t.is(new Set(flaky.map((r) => r.headers["webhook-id"])).size, 1);
    for (const r of flaky) t.is(verified(r).type, "speed_alert");

    // 429 with Retry-After: 1 — backoff alone would have retried within 200 ms.
    const limited = receiver.at("/limited");
    t.deepEqual(
      limited.map((r) => r.status),
      [429, 200],
    );
    t.true(limited[1]!.at - limited[0]!.at >= 900, `retried ${limited[1]!.at - limited[0]!.at} ms after the 429`);

    // 503 every time: MaxAttempts=3 attempts, then failed for good.
    t.deepEqual(
      receiver.at("/down").map((r) => r.status),
      [503, 503, 503],
    );

    const log = await attempts(mesh);
    const of = (path: string) => log.filter((a) => a.endpoint === receiver.url(path));
    t.deepEqual(
      of("/flaky").map((a) => [a.attemptNumber, a.success, a.httpStatusCode, a.error]),
      [
        [3, true, 200, null],
        [2, false, 500, "HTTP 500"],
        [1, false, 500, "HTTP 500"],
      ],
      "newest first, every attempt logged",
    );
    t.deepEqual(
      of("/limited").map((a) => [a.attemptNumber, a.httpStatusCode]),
      [
        [2, 200],
        [1, 429],
      ],
    );
    const down = of("/down");
    t.deepEqual(
      down.map((a) => a.attemptNumber),
      [3, 2, 1],
    );
    t.regex(down[0]!.error, /HTTP 503; gave up after 3 attempts/);
    // No answer within TimeoutSeconds: logged without a status, retried, then delivered.
    t.deepEqual(
      of("/slow").map((a) => [a.attemptNumber, a.success, a.httpStatusCode, a.error]),
      [
        [2, true, 200, null],
        [1, false, null, "timed out after 1 s"],
      ],
    );
    t.true(log.every((a) => a.correlationId === flaky[0]!.headers["webhook-id"]));
  },
);

test.serial("410 Gone disables the endpoint for good; signing off sends unsigned deliveries", async (t) => {
  const receiver = await startReceiver(t);
  receiver.on("/gone", () => ({ status: 410 }));
  const mesh = await startWebhookMesh(t, {
    endpoints: [
      { url: receiver.url("/gone"), secret: null },
      { url: receiver.url("/ok"), secret: null },
    ],
    flags: ["--Webhooks:SigningEnabled=false"],
  });
  await fireTest(mesh);
  const status = await until("the endpoint disabled", async () => {
    const s = await ok(mesh, "GET", "/api/webhooks/status");
    return s.disabledEndpoints.length === 1 && receiver.at("/ok").length === 1 && s;
  });
  t.deepEqual(status.disabledEndpoints, [receiver.url("/gone")]);
  t.false(status.signingEnabled);
  const gone = (await attempts(mesh)).filter((a) => a.endpoint === receiver.url("/gone"));
  t.deepEqual(
    gone.map((a) => [a.attemptNumber, a.success, a.httpStatusCode]),
    [[1, false, 410]],
  );
  t.regex(gone[0]!.error, /410 Gone/);

  // A later event goes to /ok only; /gone is not attempted, and no delivery is even queued for it.
  const second = await fireTest(mesh, "geofence_breach");
  t.true(second.fired);
  await until("the second delivery to /ok", () => receiver.at("/ok").length === 2);
  t.is(receiver.at("/gone").length, 1);
  const [queued] = await mesh
    .db!.em()
    .execute<{ n: string }[]>(`select count(*) as n from tracking_webhook_delivery where endpoint = ?`, [receiver.url("/gone")]);
  t.is(Number(queued!.n), 1, "only the first event's delivery exists for /gone");
  // The receiver can answer before the dispatcher records the answer: wait for the record, and
  // then nothing is left to retry (a delivery queued for /gone would keep it above zero).
  await until(
    "the second delivery recorded",
    async () => (await attempts(mesh)).filter((a) => a.endpoint === receiver.url("/ok")).length === 2,
  );
  t.is((await ok(mesh, "GET", "/api/webhooks/status")).retryQueueDepth, 0);

  // Unsigned: id and timestamp for dedupe, no signature.
  for (const r of receiver.at("/ok")) {
    t.regex(String(r.headers["webhook-id"]), /^msg_/);
    t.regex(String(r.headers["webhook-timestamp"]), /^\d+$/);
    t.is(r.headers["webhook-signature"], undefined);
  }
});

test.serial("a restart in the middle of a retry schedule loses nothing", async (t) => {
  const receiver = await startReceiver(t);
  let healthy = false;
  receiver.on("/later", () => ({ status: healthy ? 200 : 500 }));
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-webhooks-restart-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  let consumer: string | undefined;
  t.teardown(async () => {
    if (consumer) await dropDurables(consumer);
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const options: MeshOptions = {
    endpoints: [{ url: receiver.url("/later") }],
    flags: ["--Webhooks:MaxAttempts=100", "--Webhooks:RetryInitialDelayMs=100", "--Webhooks:RetryMaxDelayMs=300"],
    dataDir,
    ...(db ? { databaseUrl: db.url } : {}),
  };

  const first = await startWebhookMesh(t, options);
  consumer = await consumerIdOf(first);
  await fireTest(first);
  await until("two failed attempts", () => receiver.at("/later").length >= 2);
  await first.close();
  const beforeRestart = receiver.at("/later").length;

  healthy = true;
  const second = await startWebhookMesh(t, options);
  await until("a successful attempt after the restart", () => receiver.at("/later").some((r) => r.status === 200));
  const received = receiver.at("/later");
  t.true(received.length > beforeRestart, "attempts continued after the restart");
  t.is(new Set(received.map((r) => r.headers["webhook-id"])).size, 1, "the same event, the same webhook-id");
  for (const r of received) verified(r);

  const log = await until("the success logged", async () => {
    const items = await attempts(second);
    return items.some((a) => a.success) && items;
  });
  const numbers = log.map((a) => a.attemptNumber).reverse();
  t.deepEqual(
    numbers,
    numbers.map((_, i) => i + 1),
    "attempt numbers run on across the restart",
  );
  t.true(log[0]!.success);
  t.true(log.slice(1).every((a) => !a.success && a.httpStatusCode === 500));
  t.true(received.length >= log.length, "every logged attempt reached the receiver");
  t.is((await ok(second, "GET", "/api/webhooks/status")).retryQueueDepth, 0);
});

test.serial("the SSRF guard refuses loopback destinations without AllowLoopback, once and for good", async (t) => {
  const receiver = await startReceiver(t);
  const mesh = await startWebhookMesh(t, {
    endpoints: [{ url: receiver.url("/ip") }, { url: receiver.url("/name", "localhost") }],
    loopback: false,
  });
  await fireTest(mesh);
  const log = await until("both refusals logged", async () => {
    const status = await ok(mesh, "GET", "/api/webhooks/status");
    const items = await attempts(mesh);
    return items.length === 2 && status.retryQueueDepth === 0 && items;
  });
  t.is(receiver.requests.length, 0, "nothing was sent");
  for (const a of log) {
    t.false(a.success);
    t.is(a.httpStatusCode, null);
    t.is(a.attemptNumber, 1, "a refusal is never retried");
    t.regex(a.error, /destination refused: .*loopback address/);
  }
  t.regex(log.find((a) => a.endpoint.includes("localhost"))!.error, /localhost resolves to/);
});

test.serial("delivery log filters and paging, status figures, and the test endpoint", async (t) => {
  const receiver = await startReceiver(t);
  receiver.on("/bad", () => ({ status: 400 }));
  const mesh = await startWebhookMesh(t, { endpoints: [{ url: receiver.url("/ok") }, { url: receiver.url("/bad") }] });

  const before = await ok(mesh, "GET", "/api/webhooks/status");
  t.deepEqual(before, {
    configured: true,
    last24hDeliveries: 0,
    last24hFailures: 0,
    lastDeliveredAt: null,
    avgDurationMs: 0,
    retryQueueDepth: 0,
    signingEnabled: true,
    endpointCount: 2,
    disabledEndpoints: [],
  });

  // The body is optional: none at all fires the default type.
  const fired = await ok(mesh, "POST", "/api/webhooks/test");
  t.like(fired, { fired: true, eventType: "speed_alert", configured: true });
  t.regex(fired.message, /2 endpoints/);
  t.like(await fireTest(mesh, "geofence_breach"), { eventType: "geofence_breach" });
  const bogus = await call(mesh, "POST", "/api/webhooks/test", { eventType: "bogus" });
  t.is(bogus.status, 400);
  t.regex(JSON.stringify(bogus.body.errors), /speed_alert, geofence_breach/);

  await until(
    "four attempts",
    async () => (await attempts(mesh)).length === 4 && (await ok(mesh, "GET", "/api/webhooks/status")).retryQueueDepth === 0,
  );
  for (const r of receiver.requests) t.is(verified(r).data.deviceIdentifier, "webhook-test");
  t.deepEqual(receiver.requests.map((r) => verified(r).type).sort(), ["geofence_breach", "geofence_breach", "speed_alert", "speed_alert"]);

  const page = await ok(mesh, "GET", "/api/webhooks/deliveries");
  t.like(page, { totalCount: 4, page: 1, pageSize: 50 });
  t.deepEqual(Object.keys(page.items[0]).sort(), [
    "attemptNumber",
    "correlationId",
    "createdAt",
    "deliveryId",
    "durationMs",
    "endpoint",
    "error",
    "eventId",
    "eventType",
    "httpStatusCode",
    "id",
    "success",
  ]);
  const times = (page.items as Json[]).map((a) => Date.parse(a.createdAt));
  t.deepEqual(
    times,
    [...times].sort((a, b) => b - a),
    "newest first",
  );

  const successes = await ok(mesh, "GET", "/api/webhooks/deliveries?success=true");
  t.is(successes.totalCount, 2);
  t.true((successes.items as Json[]).every((a) => a.success && a.endpoint === receiver.url("/ok")));
  const failures = await ok(mesh, "GET", "/api/webhooks/deliveries?success=false");
  t.is(failures.totalCount, 2);
  t.true(
    (failures.items as Json[]).every((a) => !a.success && a.httpStatusCode === 400 && a.error === "HTTP 400" && a.attemptNumber === 1),
  );
  const breaches = await ok(mesh, "GET", "/api/webhooks/deliveries?eventType=geofence_breach");
  t.is(breaches.totalCount, 2);
  t.true((breaches.items as Json[]).every((a) => a.eventType === "geofence_breach"));
  const combined = await ok(mesh, "GET", "/api/webhooks/deliveries?eventType=speed_alert&success=false");
  t.is(combined.totalCount, 1);
  t.is((await ok(mesh, "GET", `/api/webhooks/deliveries?since=${new Date(Date.now() + 60_000).toISOString()}`)).totalCount, 0);
  t.is((await ok(mesh, "GET", `/api/webhooks/deliveries?since=${new Date(Date.now() - 600_000).toISOString()}`)).totalCount, 4);
  const second = await ok(mesh, "GET", "/api/webhooks/deliveries?pageSize=1&page=2");
  t.like(second, { totalCount: 4, page: 2, pageSize: 1 });
  t.is(second.items.length, 1);
  t.is(second.items[0].id, page.items[1].id);
  t.is((await ok(mesh, "GET", "/api/webhooks/deliveries?page=9")).items.length, 0);

  for (const [query, field] of [
    ["pageSize=201", "pageSize"],
    ["pageSize=0", "pageSize"],
    ["page=0", "page"],
    ["eventType=observation", "eventType"],
  ] as const) {
    const res = await call(mesh, "GET", `/api/webhooks/deliveries?${query}`);
    t.is(res.status, 400, query);
    t.truthy(res.body.errors?.[field], `${query} names ${field}: ${JSON.stringify(res.body)}`);
  }

  const after = await ok(mesh, "GET", "/api/webhooks/status");
  t.like(after, { configured: true, last24hDeliveries: 4, last24hFailures: 2, retryQueueDepth: 0, signingEnabled: true, endpointCount: 2 });
  t.regex(after.lastDeliveredAt, iso);
  t.is(typeof after.avgDurationMs, "number");
  t.true(after.avgDurationMs >= 0);
});

test.serial("without endpoints nothing is configured, fired or recorded", async (t) => {
  const mesh = await startWebhookMesh(t, { endpoints: [] });
  const fired = await ok(mesh, "POST", "/api/webhooks/test", { eventType: "geofence_breach" });
  t.like(fired, { fired: false, configured: false, eventType: "geofence_breach" });
  t.like(await ok(mesh, "GET", "/api/webhooks/status"), {
    configured: false,
    endpointCount: 0,
    last24hDeliveries: 0,
    signingEnabled: true,
  });
  const [row] = await mesh
    .db!.em()
    .execute<{ n: string }[]>(`select count(*) as n from outbox_event where subject = 'tracking.v1.webhook.test_requested'`);
  t.is(Number(row!.n), 0);
});

test.serial("an endpoint without a secret while signing is on stops start-up, naming its index", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-webhooks-config-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const err = await t.throwsAsync(
    startTestMesh({
      dataDir,
      ...(db ? { databaseUrl: db.url } : {}),
      flags: [endpointFlag([{ url: "https://hooks.example/a" }, { url: "https://hooks.example/b", secret: null }])],
    }),
  );
  t.regex(err!.message, /Webhooks:Endpoints: item 1 has no Secret/);
  t.false(err!.message.includes(secret));
});

// Two deployments on one NATS server share the TRACKING stream; each must deliver only the events
// its own database recorded (its durables are its own, and foreign events are not in its outbox).
if (realServers(test, "deployments sharing a NATS server", ["nats"])) {
  test.serial("deployments sharing a NATS server deliver only their own events", async (t) => {
    const receiver = await startReceiver(t);
    const a = await startWebhookMesh(t, { endpoints: [{ url: receiver.url("/a") }] });
    const b = await startWebhookMesh(t, { endpoints: [{ url: receiver.url("/b") }] });
    await fireTest(a);
    await until("A's delivery", () => receiver.at("/a").length === 1);
    await fireTest(b);
    // B reads the stream in order: once its own event is delivered, A's earlier one has been seen.
    await until("B's delivery", () => receiver.at("/b").length === 1);
    const fromA = await until("A's attempt logged", async () => (await attempts(a)).length === 1 && (await attempts(a)));
    t.is(receiver.at("/a").length, 1);
    t.is(receiver.at("/b").length, 1);
    t.not(receiver.at("/a")[0]!.headers["webhook-id"], receiver.at("/b")[0]!.headers["webhook-id"]);
    t.is(fromA[0]!.correlationId, receiver.at("/a")[0]!.headers["webhook-id"]);
    const [queued] = await b.db!.em().execute<{ n: string }[]>(`select count(*) as n from tracking_webhook_delivery`);
    t.is(Number(queued!.n), 1, "B queued its own event only");
  });
}
