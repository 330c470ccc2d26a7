// The live event stream through the tracking front, with the `eventsource` package as the client
// (and plain node:http where the raw bytes matter): stream tokens, 401 before any stream byte, the
// `: connected` comment, event names, order and data, Last-Event-ID resume, keep-alives, and two
// meshes sharing PostgreSQL and NATS.
import test, { type ExecutionContext } from "ava";
import { EventSource, type ErrorEvent } from "eventsource";
import { createHash } from "node:crypto";
import { get as httpGet, type IncomingMessage } from "node:http";
import { realInfra, realServers } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";
import { sendJson } from "../support/rest.js";

let mesh: TestMesh;
let base: string;

test.before(async () => {
  mesh = await startTestMesh();
  base = mesh.frontUrl("tracking");
});
test.after.always(async () => {
  await mesh?.close();
});

type Json = Record<string, unknown>;

interface Received {
  type: string;
  id: string;
  data: Json;
}

const call = (path: string, method = "GET", body?: unknown, headers: Record<string, string> = {}, at = base) =>
  sendJson<Json>(`${at}${path}`, method, body, headers);

async function newToken(at = base, headers: Record<string, string> = {}): Promise<string> {
  const res = await call("/api/events/token", "POST", undefined, headers, at);
  if (res.status !== 200) throw new Error(`token answered ${res.status}`);
  return String(res.body.token);
}

const EVENT_NAMES = ["observation", "speed_alert", "geofence_breach", "data_changed", "dropped"];

/** An EventSource that records every named event; closed at the end of the test. */
function listen(t: ExecutionContext, url: string, lastEventId?: string) {
  const received: Received[] = [];
  const errors: ErrorEvent[] = [];
  const es = new EventSource(url, {
    // The first connection of a resuming client carries Last-Event-ID too (EventSource adds it on
    // its own reconnects only).
    fetch: (input, init) => fetch(input, lastEventId ? { ...init, headers: { ...init?.headers, "last-event-id": lastEventId } } : init),
  });
  for (const name of EVENT_NAMES) {
    es.addEventListener(name, (e) => received.push({ type: name, id: e.lastEventId, data: JSON.parse(String(e.data)) as Json }));
  }
  es.addEventListener("error", (e) => errors.push(e as ErrorEvent));
  const opened = new Promise<void>((resolve) => es.addEventListener("open", () => resolve()));
  t.teardown(() => es.close());
  return { es, received, errors, opened };
}

/** A raw GET: the status, the headers and everything until the server ends the answer or `stopAt` shows. */
function rawGet(url: string, headers: Record<string, string> = {}, stopAt?: string) {
  return new Promise<{ res: IncomingMessage; text: string }>((resolve, reject) => {
    const req = httpGet(url, { headers, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString();
        if (stopAt && text.includes(stopAt)) {
          req.destroy();
          resolve({ res, text });
        }
      });
      res.on("end", () => resolve({ res, text }));
      res.on("error", reject);
    });
    req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
  });
}

/**
 * The events about these resources. With NATS_URL set, every mesh of every suite publishes on the
 * same TRACKING stream, so a client also sees other suites' events; assertions keep to their own.
 */
function about(received: Received[], ids: readonly string[]): Received[] {
  const mine = new Set(ids);
  return received.filter((e) => [e.data.id, e.data.deviceId].some((v) => typeof v === "string" && mine.has(v)));
}

async function createAsset(name: string, at = base): Promise<string> {
  const res = await call("/api/assets", "POST", { name }, {}, at);
  return String(res.body.id);
}

test.serial("POST /api/events/token answers a token and when it expires; only its hash is stored", async (t) => {
  const before = Date.now();
  const res = await call("/api/events/token", "POST");
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), ["expiresAt", "token"]);
  const token = String(res.body.token);
  t.regex(token, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
  const expiresAt = Date.parse(String(res.body.expiresAt));
  // SseToken:TtlMinutes defaults to 10.
  t.true(expiresAt >= before + 10 * 60_000 && expiresAt <= Date.now() + 10 * 60_000);
  t.not(await newToken(), token, "every token is new");

  const rows = await mesh.db!.em().getConnection().execute<{ token_hash: string }[]>(`select "token_hash" from "tracking_stream_token"`);
  const hash = createHash("sha256").update(token).digest("hex");
  t.true(rows.some((r) => r.token_hash === hash));
  t.false(
    rows.some((r) => r.token_hash.includes(token)),
    "the token itself is nowhere",
  );
});

test.serial("a missing, unknown or expired token answers 401 before any stream byte", async (t) => {
  const expired = await newToken();
  await mesh
    .db!.em()
    .getConnection()
    .execute(`update "tracking_stream_token" set "expires_at" = now() - interval '1 second' where "token_hash" = ?`, [
      createHash("sha256").update(expired).digest("hex"),
    ]);
  const cases: [string, string, RegExp][] = [
    ["missing", "/api/events", /token is required/],
    ["unknown", `/api/events?token=${"A".repeat(43)}`, /unknown or expired/],
    ["malformed", "/api/events?token=not-a-token", /unknown or expired/],
    ["expired", `/api/events?token=${expired}`, /unknown or expired/],
  ];
  for (const [name, path, detail] of cases) {
    const { res, text } = await rawGet(`${base}${path}`);
    t.is(res.statusCode, 401, name);
    t.is(res.headers["content-type"], "application/problem+json", name);
    const body = JSON.parse(text) as Json;
    t.is(body.status, 401, name);
    t.regex(String(body.detail), detail, name);
    t.false(text.includes(": connected"), `${name}: no stream byte`);
  }

  const { es, errors } = listen(t, `${base}/api/events?token=${expired}`);
  await until(() => errors.length > 0, "the EventSource to fail");
  t.is(errors[0]!.code, 401);
  t.is(es.readyState, EventSource.CLOSED, "a 401 is final: no reconnect");
});

test.serial("the stream opens with `: connected` and the event-stream headers", async (t) => {
  const token = await newToken();
  const { res, text } = await rawGet(`${base}/api/events?token=${token}`, {}, "\n\n");
  t.is(res.statusCode, 200);
  t.is(res.headers["content-type"], "text/event-stream; charset=utf-8");
  t.is(res.headers["cache-control"], "no-cache");
  t.is(res.headers.connection, "keep-alive");
  t.is(res.headers["x-accel-buffering"], "no");
  t.is(text, ": connected\n\n");
});

test.serial("events arrive in order, named, with an increasing id and the data REST answers", async (t) => {
  const token = await newToken();
  const client = listen(t, `${base}/api/events?token=${token}`);
  await client.opened;

  const assetId = await createAsset("stream van");
  const device = await call("/api/devices", "POST", { identifier: `stream-${Date.now()}`, assetId });
  const deviceId = String(device.body.id);
  const fence = await call("/api/geofences", "POST", { name: "depot", centerLatitude: 52.52, centerLongitude: 13.405, radiusMeters: 500 });
  const fenceId = String(fence.body.id);
  const observed = await call("/api/observations", "POST", {
    deviceId,
    observedAt: new Date().toISOString(),
    latitude: 52.52,
    longitude: 13.405,
    speedKmh: 150,
  });
  t.is(observed.status, 200);
  await call(`/api/assets/${assetId}`, "PUT", { name: "stream van 2" });
  await call(`/api/geofences/${fenceId}`, "DELETE");
  await mesh.drainOutbox();
  const ids = [assetId, deviceId, fenceId];
  await until(() => about(client.received, ids).length >= 8, "eight events");

  const got = about(client.received, ids);
  t.deepEqual(
    got.map((e) => [e.type, e.type === "data_changed" ? `${String(e.data.entity)}.${String(e.data.action)}` : ""]),
    [
      ["data_changed", "asset.created"],
      ["data_changed", "device.created"],
      ["data_changed", "geofence.created"],
      ["observation", ""],
      ["speed_alert", ""],
      ["geofence_breach", ""],
      ["data_changed", "asset.updated"],
      ["data_changed", "geofence.deleted"],
    ],
  );
  const seqs = got.map((e) => Number(e.id));
  t.true(
    seqs.every((id, i) => Number.isInteger(id) && (i === 0 || id > seqs[i - 1]!)),
    `ids increase: ${seqs.join(",")}`,
  );
  t.deepEqual(got[0]!.data, { entity: "asset", action: "created", id: assetId });
  t.deepEqual(got[1]!.data, { entity: "device", action: "created", id: deviceId });
  t.deepEqual(got[7]!.data, { entity: "geofence", action: "deleted", id: fenceId });
  t.deepEqual(got[3]!.data, observed.body, "the Observation exactly as REST answered it");
  t.like(got[4]!.data, { deviceId, observationId: observed.body.id, speedKmh: 150, acknowledged: false, acknowledgedBy: null });
  t.like(got[5]!.data, { deviceId, geofenceId: fenceId, breachEventType: "Enter" });
});

test.serial("a client reconnecting with Last-Event-ID gets exactly the events it missed, then live ones", async (t) => {
  const token = await newToken();
  const first = listen(t, `${base}/api/events?token=${token}`);
  await first.opened;
  const before = await createAsset("before the break");
  await mesh.drainOutbox();
  await until(() => about(first.received, [before]).length === 1, "the first event");
  const lastId = about(first.received, [before])[0]!.id;
  first.es.close();

  const missed = [await createAsset("missed 1"), await createAsset("missed 2"), await createAsset("missed 3")];
  await mesh.drainOutbox();

  const resumed = listen(t, `${base}/api/events?token=${token}`, lastId);
  const ids = [before, ...missed];
  await until(() => about(resumed.received, ids).length >= 3, "the missed events");
  const live = await createAsset("after the reconnect");
  ids.push(live);
  await mesh.drainOutbox();
  await until(() => about(resumed.received, ids).length >= 4, "the live event");
  t.deepEqual(
    about(resumed.received, ids).map((e) => e.data.id),
    [...missed, live],
    "the missed ones in order, then the live one: nothing before the id, nothing twice",
  );
  const seqs = resumed.received.map((e) => Number(e.id));
  t.true(seqs[0]! > Number(lastId) && seqs.every((id, i) => i === 0 || id > seqs[i - 1]!), "ids continue after the client's");
  if (!realInfra().natsUrl) {
    // Alone on its bus, the mesh published nothing else: the ids follow on without a gap.
    t.deepEqual(
      seqs,
      [1, 2, 3, 4].map((n) => Number(lastId) + n),
    );
  }

  // A browser's first connection cannot send headers: the query parameter does the same.
  const byQuery = listen(t, `${base}/api/events?token=${token}&lastEventId=${lastId}`);
  await until(() => about(byQuery.received, ids).length >= 4, "the replay by query parameter");
  t.deepEqual(
    about(byQuery.received, ids).map((e) => e.data.id),
    [...missed, live],
  );
});

test("an idle stream gets a keep-alive comment every Fronts:SseKeepAliveSeconds", async (t) => {
  const own = await startTestMesh({ flags: ["--Fronts:SseKeepAliveSeconds=1"] });
  t.teardown(() => own.close());
  const at = own.frontUrl("tracking");
  const token = await newToken(at);
  const { text } = await rawGet(`${at}/api/events?token=${token}`, {}, ": keep-alive\n\n");
  t.true(text.startsWith(": connected\n\n"));
  // Alone on its bus nothing else is written; on a shared NATS other suites' events may come first.
  if (!realInfra().natsUrl) t.is(text, ": connected\n\n: keep-alive\n\n");
  else t.true(text.endsWith("\n\n: keep-alive\n\n"));
});

test("the token needs an operator API key; the stream needs only the token", async (t) => {
  const operator = "operator-key-0123456789";
  const ingest = "ingest-key-0123456789ab";
  const keys = JSON.stringify([
    { Name: "ops", Role: "operator", Key: operator },
    { Name: "feed", Role: "ingest", Key: ingest },
  ]);
  const own = await startTestMesh({ flags: [`--Auth:ApiKeys=${keys}`] });
  t.teardown(() => own.close());
  const at = own.frontUrl("tracking");
  t.is((await call("/api/events/token", "POST", undefined, {}, at)).status, 401);
  t.is((await call("/api/events/token", "POST", undefined, { "x-api-key": ingest }, at)).status, 403);
  const token = await newToken(at, { "x-api-key": operator });
  const { res, text } = await rawGet(`${at}/api/events?token=${token}`, {}, "\n\n");
  t.is(res.statusCode, 200);
  t.is(text, ": connected\n\n");
});

test("through a gateway-only process the stream crosses the gRPC hop the same way", async (t) => {
  const service = await startTestMesh({ mode: { kind: "service", name: "tracking" } });
  t.teardown(() => service.close());
  const gateway = await startTestMesh({ mode: { kind: "gateway" }, flags: [`--Services:Tracking:Address=${service.serviceUrl}`] });
  t.teardown(() => gateway.close());
  const at = gateway.frontUrl("tracking");

  const refused = await rawGet(`${at}/api/events?token=${"B".repeat(43)}`);
  t.is(refused.res.statusCode, 401);
  t.is(refused.res.headers["content-type"], "application/problem+json");

  const token = await newToken(at);
  const first = listen(t, `${at}/api/events?token=${token}`);
  await first.opened;
  const before = await createAsset("over gRPC", at);
  await service.drainOutbox();
  await until(() => about(first.received, [before]).length === 1, "the event over gRPC");
  first.es.close();
  const missed = await createAsset("missed over gRPC", at);
  await service.drainOutbox();
  // Last-Event-ID travels as a gRPC header to the service.
  const resumed = listen(t, `${at}/api/events?token=${token}`, about(first.received, [before])[0]!.id);
  await until(() => about(resumed.received, [missed]).length === 1, "the missed event over gRPC");
  t.deepEqual(
    about(resumed.received, [before, missed]).map((e) => e.data.id),
    [missed],
  );
});

if (realServers(test, "two meshes sharing PostgreSQL and NATS", ["postgres", "nats"])) {
  test("an event raised through one mesh reaches a client of another sharing PostgreSQL and NATS", async (t) => {
    const a = await startTestMesh();
    // B shares A's database (A drops it at close, so B closes first).
    const b = await startTestMesh({ databaseUrl: a.config.runtime.database.url });
    t.teardown(async () => {
      await b.close();
      await a.close();
    });
    // A token issued by A opens a stream on B: tokens live in the shared database.
    const token = await newToken(a.frontUrl("tracking"));
    const client = listen(t, `${b.frontUrl("tracking")}/api/events?token=${token}`);
    await client.opened;
    const id = await createAsset("from mesh A", a.frontUrl("tracking"));
    await a.drainOutbox();
    await until(() => client.received.some((e) => e.data.id === id), "the event on mesh B");
    t.like(
      client.received.find((e) => e.data.id === id),
      { type: "data_changed", data: { entity: "asset", action: "created", id } },
    );
  });
}
