// What a real @grpc/grpc-js client must see from the service host's gRPC path
// (services/runtime/host/grpc-stream-handler.ts): deadlines (the client's and the server's half), request and response metadata, a
// server stream cancelled by the client, an error with google.rpc.BadRequest details, and a client
// stream. Messages come from proto-loader reading proto/ (and google/rpc), not from our gen/ code.
// assets-grpc.test.ts covers the asset CRUD round trip, the bare INVALID_ARGUMENT / NOT_FOUND codes
// and that grpc-status-details-bin is present; this suite decodes what those trailers say.
import * as grpc from "@grpc/grpc-js";
import test, { type ExecutionContext } from "ava";
import { randomUUID } from "node:crypto";
import http2 from "node:http2";
import { createLogger } from "../../services/runtime/logging/index.js";
import { startTelemetry, type Telemetry } from "../../services/runtime/telemetry/index.js";
import { type GrpcPackage, loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const OPS_KEY = `ops-${randomUUID()}`;
const INGEST_KEY = `feed-${randomUUID()}`;
// Small, so three observations make a capped export whose response headers say so.
const EXPORT_MAX_ROWS = 2;

interface LogLine {
  level: string;
  msg?: string;
  [key: string]: unknown;
}

interface LoggedMesh {
  mesh: TestMesh;
  logs: LogLine[];
}

/** The mesh with a logger this suite reads back: a cancelled call must not be logged as a failure. */
async function startLoggedMesh(flags: string[]): Promise<LoggedMesh> {
  const logs: LogLine[] = [];
  const logger = createLogger({ level: "warn", destination: { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) } });
  return { mesh: await startTestMesh({ flags, logger }), logs };
}

let telemetry: Telemetry;
let started: LoggedMesh;
let mesh: TestMesh;
/** Log lines of the start itself; whatever comes after must not be a warning or an error. */
let startLogCount = 0;
let pkg: GrpcPackage;
const clients: grpc.Client[] = [];
// biome-ignore lint/suspicious/noExplicitAny: methods are loaded at run time
let assets: any, devices: any, observations: any, events: any;

test.before(async () => {
  // W3C propagation, so a traceparent in the metadata is continued (exporter none: nothing is recorded).
  telemetry = await startTelemetry({
    serviceName: "grpc-js-client-test",
    exporter: "none",
    env: {},
    logger: createLogger({ level: "silent" }),
  });
  const keys = JSON.stringify([
    { Name: "ops", Role: "operator", Key: OPS_KEY },
    { Name: "feed", Role: "ingest", Key: INGEST_KEY },
  ]);
  started = await startLoggedMesh([`--Auth:ApiKeys=${keys}`, `--Tracking:ExportMaxRows=${EXPORT_MAX_ROWS}`]);
  mesh = started.mesh;
  startLogCount = started.logs.length;
  pkg = loadGrpcPackage([
    "tracking/v1/asset.proto",
    "tracking/v1/device.proto",
    "tracking/v1/observation.proto",
    "tracking/v1/event_stream.proto",
    "google/rpc/status.proto",
    "google/rpc/error_details.proto",
  ]);
  const address = `127.0.0.1:${mesh.servicePort}`;
  const credentials = grpc.credentials.createInsecure();
  const client = (Service: typeof grpc.Client) => {
    const c = new Service(address, credentials);
    clients.push(c);
    return c;
  };
  const v1 = pkg.tracking.v1;
  [assets, devices, observations, events] = [v1.AssetService, v1.DeviceService, v1.ObservationService, v1.EventStreamService].map(client);
});
test.after.always(async () => {
  for (const c of clients) c.close();
  await started?.mesh.close();
  await telemetry?.shutdown();
});

/** Metadata carrying `key` as x-api-key (the operator key by default; null: none) and any other entries. */
function meta(entries: Record<string, string> = {}, key: string | null = OPS_KEY): grpc.Metadata {
  const m = new grpc.Metadata();
  if (key !== null) m.set("x-api-key", key);
  for (const [name, value] of Object.entries(entries)) m.set(name, value);
  return m;
}

/** Warnings and errors the host logged after its start. */
const problemsLogged = () => started.logs.slice(startLogCount).filter((l) => ["warn", "error", "fatal"].includes(l.level));

/** A unary call with everything grpc-js reports about it, in the order it reported it. */
interface Observed<T> {
  response?: T;
  error?: grpc.ServiceError;
  metadata?: grpc.Metadata;
  status: grpc.StatusObject;
  order: string[];
}

function observe<T>(client: grpc.Client, method: string, request: object, metadata: grpc.Metadata, options: grpc.CallOptions = {}) {
  return new Promise<Observed<T>>((resolve) => {
    const order: string[] = [];
    const seen: Partial<Observed<T>> = { order };
    // biome-ignore lint/suspicious/noExplicitAny: methods are loaded at run time
    const call: grpc.ClientUnaryCall = (client as any)[method](request, metadata, options, (err: grpc.ServiceError | null, res: T) => {
      order.push(err ? "error" : "response");
      if (err) seen.error = err;
      else seen.response = res;
    });
    call.on("metadata", (m: grpc.Metadata) => {
      order.push("metadata");
      seen.metadata = m;
    });
    call.on("status", (s: grpc.StatusObject) => {
      order.push("status");
      seen.status = s;
      resolve(seen as Observed<T>);
    });
  });
}

interface AnyMessage {
  type_url: string;
  value: Buffer;
}
interface SseFrame {
  event?: string;
  id?: string;
  comment?: string;
  data?: AnyMessage;
}

/** A StreamEvents call and what has arrived on it so far. */
function openEventStream(token: string, options: grpc.CallOptions = {}) {
  const call: grpc.ClientReadableStream<{ events?: SseFrame[] }> = events.StreamEvents({ token }, new grpc.Metadata(), options);
  const frames: SseFrame[] = [];
  const got = { frames, metadata: undefined as grpc.Metadata | undefined, error: undefined as grpc.ServiceError | undefined };
  call.on("metadata", (m: grpc.Metadata) => (got.metadata = m));
  call.on("data", (batch: { events?: SseFrame[] }) => frames.push(...(batch.events ?? [])));
  call.on("error", (e: grpc.ServiceError) => (got.error = e));
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  return { call, got, status };
}

async function streamToken(): Promise<string> {
  return (await unaryCall<{ token: string }>(events, "CreateStreamToken", {}, meta())).token;
}

const createAsset = async (name: string) => (await unaryCall<{ id: string }>(assets, "CreateAsset", { asset: { name } }, meta())).id;

async function createDevice(): Promise<{ id: string; identifier: string }> {
  return unaryCall(devices, "CreateDevice", { device: { identifier: `grpc-js-${randomUUID().slice(0, 8)}` } }, meta());
}

/** Positions a minute apart, a few minutes ago, near Amsterdam. */
function positions(identifier: string, count: number) {
  const start = Math.floor(Date.now() / 1000) - 600;
  return Array.from({ length: count }, (_, i) => ({
    deviceIdentifier: identifier,
    observedAt: { seconds: start + 60 * i },
    latitude: 52.37 + i / 1000,
    longitude: 4.89,
  }));
}

/** The DataChanged frames about `ids` (other suites share NATS), decoded. */
function changesAbout(frames: SseFrame[], ids: readonly string[]) {
  return frames
    .filter((f) => f.event === "data_changed" && f.data?.type_url === "type.googleapis.com/tracking.v1.DataChanged")
    .map((f) => ({
      id: f.id,
      change: pkg.tracking.v1.DataChanged.deserialize(f.data!.value) as { entity: string; action: string; id: string },
    }))
    .filter((f) => ids.includes(f.change.id));
}

async function meshStillAnswers(t: ExecutionContext) {
  const id = await createAsset(`after ${t.title}`);
  const got = await unaryCall<{ id: string }>(assets, "GetAsset", { id }, meta());
  t.is(got.id, id, "the mesh answers after the call ended");
}

// --- deadlines ---------------------------------------------------------------------------------

test("a deadline that passes on an open server stream: DEADLINE_EXCEEDED on the client, the mesh answers after", async (t) => {
  const token = await streamToken();
  // Long enough for the first frame to arrive first even on a busy machine.
  const deadlineMs = 1500;
  const opened = Date.now();
  const stream = openEventStream(token, { deadline: opened + deadlineMs });
  const status = await stream.status;
  const elapsed = Date.now() - opened;
  t.is(status.code, grpc.status.DEADLINE_EXCEEDED, `status ${status.code}: ${status.details}`);
  t.is(stream.got.error?.code, grpc.status.DEADLINE_EXCEEDED, "the error event carries the same code");
  t.true(elapsed >= deadlineMs - 5, `ended after ${elapsed} ms, not before the deadline`);
  t.is(stream.got.frames[0]?.comment, "connected", "the stream was open (its first frame arrived) when the deadline passed");
  await meshStillAnswers(t);
  t.deepEqual(problemsLogged(), []);
});

// grpc-js's own timer ends the call above; this is the server's half, which that timer hides: the
// host must end the call at the grpc-timeout it was sent, with DEADLINE_EXCEEDED in the trailers
// (what a grpc-js server answers), so a caller that leaves the deadline to the server, or a proxy
// in between, is not told the stream completed. node:http2 speaks the wire as grpc-js does.
test("the server ends a call at the grpc-timeout it received, with grpc-status 4 in the trailers", async (t) => {
  // 3 s: long enough for the stream's first message to arrive on a loaded two-core machine (a CI
  // run with 1 s saw the deadline come first), short enough to keep the test quick.
  t.timeout(30_000, "the server never ended the call after its 3 s grpc-timeout");
  const token = await streamToken();
  const body: Buffer = pkg.tracking.v1.StreamEventsRequest.serialize({ token });
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  const session = http2.connect(`http://127.0.0.1:${mesh.servicePort}`);
  t.teardown(() => session.close());
  const opened = Date.now();
  const req = session.request({
    ":method": "POST",
    ":path": "/tracking.v1.EventStreamService/StreamEvents",
    "content-type": "application/grpc",
    te: "trailers",
    "grpc-timeout": "3000m",
  });
  let headers: (http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader) | undefined;
  let trailers: http2.IncomingHttpHeaders | undefined;
  let failure: Error | undefined;
  session.on("error", (err) => (failure = err));
  req.on("error", (err) => (failure = err));
  req.on("response", (h) => (headers = h));
  req.on("trailers", (h) => (trailers = h));
  let received = 0;
  req.on("data", (chunk: Buffer) => (received += chunk.length));
  req.end(frame);
  await new Promise<void>((resolve) => req.once("close", () => resolve()));
  const elapsed = Date.now() - opened;
  t.is(failure, undefined);
  t.is(headers?.[":status"], 200);
  t.true(received > 0, "the stream was open: its first message arrived");
  t.true(elapsed >= 2990, `the server waited for the deadline (${elapsed} ms)`);
  t.is(req.rstCode, http2.constants.NGHTTP2_NO_ERROR, "ended with trailers, not reset");
  t.is(trailers?.["grpc-status"], String(grpc.status.DEADLINE_EXCEEDED), `trailers: ${JSON.stringify(trailers)}`);
  await meshStillAnswers(t);
});

test("generous deadlines on unary calls succeed: grpc-timeout is parsed in every unit grpc-js writes", async (t) => {
  // grpc-js writes milliseconds below 10^8 ms ("60000m", "86400000m") and seconds above ("2592000S").
  for (const [label, ms] of [
    ["a minute", 60_000],
    ["a day", 86_400_000],
    ["30 days", 30 * 86_400_000],
  ] as const) {
    const name = `deadline ${label}`;
    const created = await observe<{ id: string; name: string }>(assets, "CreateAsset", { asset: { name } }, meta(), {
      deadline: Date.now() + ms,
    });
    t.is(created.status.code, grpc.status.OK, `${label}: ${created.status.details}`);
    t.is(created.response?.name, name, label);
  }
});

test("a stream opened with a deadline weeks away stays open until the client cancels it", async (t) => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on("warning", onWarning);
  t.teardown(() => process.off("warning", onWarning));
  const token = await streamToken();
  for (const [label, ms] of [
    ["a day", 86_400_000],
    ["30 days", 30 * 86_400_000],
  ] as const) {
    const stream = openEventStream(token, { deadline: Date.now() + ms });
    t.teardown(() => stream.call.cancel());
    let ended: grpc.StatusObject | undefined;
    void stream.status.then((s) => (ended = s));
    await until(() => stream.got.frames.length > 0 || ended, `the first frame (${label})`);
    const id = await createAsset(`live under a deadline of ${label}`);
    await mesh.drainOutbox();
    await until(() => changesAbout(stream.got.frames, [id]).length > 0 || ended, `the asset's event or the stream's end (${label})`);
    t.is(
      ended,
      undefined,
      `${label}: the stream ended with ${ended?.code} "${ended?.details}" long before its deadline; process warnings: ${JSON.stringify(warnings)}`,
    );
    if (ended) continue;
    t.is(changesAbout(stream.got.frames, [id]).length, 1, `${label}: the event arrived on the open stream`);
    stream.call.cancel();
    t.is((await stream.status).code, grpc.status.CANCELLED, label);
  }
});

// --- metadata ----------------------------------------------------------------------------------

test("request metadata reaches the server: x-api-key decides the answer", async (t) => {
  const anonymous = await observe(assets, "CreateAsset", { asset: { name: "no key" } }, meta({}, null));
  t.is(anonymous.status.code, grpc.status.UNAUTHENTICATED);
  const ingest = await observe(assets, "CreateAsset", { asset: { name: "ingest key" } }, meta({}, INGEST_KEY));
  t.is(ingest.status.code, grpc.status.PERMISSION_DENIED);
  const operator = await observe<{ name: string }>(assets, "CreateAsset", { asset: { name: "operator key" } }, meta());
  t.is(operator.status.code, grpc.status.OK);
  t.is(operator.response?.name, "operator key");
});

test("a traceparent in the metadata is continued: the asset.created event carries its trace id", async (t) => {
  const seen: Record<string, string>[] = [];
  const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.asset.created"] }, (m) => {
    seen.push(m.headers);
  });
  t.teardown(() => sub.stop());
  const traceId = randomUUID().replaceAll("-", "");
  await unaryCall(assets, "CreateAsset", { asset: { name: "traced" } }, meta({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }));
  await mesh.drainOutbox();
  const traceparent = await until(() => seen.map((h) => h.traceparent).find((v) => v?.includes(traceId)), `an event of trace ${traceId}`);
  t.regex(traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
});

test("response metadata: initial metadata before the answer, then the status with code 0", async (t) => {
  const requestId = `grpc-js-${randomUUID()}`;
  const ok = await observe<{ id: string }>(assets, "CreateAsset", { asset: { name: "metadata" } }, meta({ "x-request-id": requestId }));
  t.deepEqual(ok.order, ["metadata", "response", "status"]);
  t.is(ok.status.code, grpc.status.OK);
  t.truthy(ok.response?.id);
  t.regex(String(ok.metadata?.get("content-type")[0]), /^application\/grpc(\+proto)?$/);
  t.deepEqual(ok.metadata?.get("x-request-id"), [requestId], "the caller's x-request-id comes back as initial metadata");

  const fresh = await observe(assets, "GetAsset", { id: ok.response!.id }, meta());
  t.regex(String(fresh.metadata?.get("x-request-id")[0]), /^[0-9a-f-]{36}$/, "without one, the host makes one up");
  t.not(fresh.metadata?.get("x-request-id")[0], requestId);
});

test("response headers a handler sets arrive as initial metadata: a capped csv export says so", async (t) => {
  const device = await createDevice();
  const batch = await unaryCall<{ accepted: number }>(
    observations,
    "BatchIngestObservations",
    { observations: positions(device.identifier, 3) },
    meta(),
  );
  t.is(batch.accepted, 3);
  const history = await observe<{ totalCount: number; export?: { contentType: string; data: Buffer } }>(
    observations,
    "GetObservationHistory",
    { deviceId: device.id, format: "csv" },
    meta(),
  );
  t.is(history.status.code, grpc.status.OK, history.status.details);
  t.is(history.response?.totalCount, 3);
  t.is(history.response?.export?.contentType, "text/csv; charset=utf-8");
  const rows = history.response!.export!.data.toString("utf8").trim().split("\n");
  t.is(rows.length, 1 + EXPORT_MAX_ROWS, "a header line and the capped rows");
  t.deepEqual(history.metadata?.get("x-export-truncated"), ["true"]);
  t.deepEqual(history.metadata?.get("x-export-total-count"), ["3"]);
  t.regex(String(history.metadata?.get("content-disposition")[0]), /^attachment; filename="observations-\d{8}-\d{6}\.csv"$/);
  t.deepEqual(history.status.metadata.get("x-export-truncated"), [], "headers, not trailers");
});

// --- a server stream ---------------------------------------------------------------------------

test("StreamEvents delivers events in order on an open stream; call.cancel() ends it CANCELLED and the mesh serves on", async (t) => {
  const token = await streamToken();
  const stream = openEventStream(token);
  t.teardown(() => stream.call.cancel());
  await until(() => stream.got.frames.length > 0, "the first frame");
  t.deepEqual(stream.got.frames[0], { comment: "connected" }, "the stream opens with the `connected` comment");
  t.regex(String(stream.got.metadata?.get("x-request-id")[0]), /^[0-9a-f-]{36}$/, "initial metadata before the first message");

  const ids: string[] = [];
  for (const n of [1, 2, 3]) ids.push(await createAsset(`streamed ${n}`));
  await mesh.drainOutbox();
  await until(() => changesAbout(stream.got.frames, ids).length >= 3, "three data_changed events");
  const changes = changesAbout(stream.got.frames, ids);
  t.deepEqual(
    changes.map((c) => c.change),
    ids.map((id) => ({ entity: "asset", action: "created", id })),
    "one per asset, in the order they were created",
  );
  const seqs = changes.map((c) => Number(c.id));
  t.true(
    seqs.every((s, i) => Number.isInteger(s) && (i === 0 || s > seqs[i - 1]!)),
    `event ids increase: ${seqs.join(",")}`,
  );
  t.is(stream.got.error, undefined, "nothing went wrong while it was open");

  stream.call.cancel();
  const status = await stream.status;
  t.is(status.code, grpc.status.CANCELLED);
  t.is(stream.got.error?.code, grpc.status.CANCELLED);

  // A new stream opens and is live: the old one's end left the hub working.
  const again = openEventStream(token);
  t.teardown(() => again.call.cancel());
  await until(() => again.got.frames.length > 0, "the first frame of a new stream");
  const after = await createAsset("after the cancel");
  await mesh.drainOutbox();
  await until(() => changesAbout(again.got.frames, [after]).length === 1, "the event on the new stream");
  again.call.cancel();
  t.is((await again.status).code, grpc.status.CANCELLED);
  await meshStillAnswers(t);
  t.deepEqual(problemsLogged(), [], "a cancelled stream is not a failure in the log");
});

test("an unknown stream token: UNAUTHENTICATED before any message", async (t) => {
  const stream = openEventStream("A".repeat(43));
  const status = await stream.status;
  t.is(status.code, grpc.status.UNAUTHENTICATED);
  t.is(status.details, "the stream token is unknown or expired");
  t.deepEqual(stream.got.frames, []);
});

// --- an error with details -----------------------------------------------------------------------

interface RpcStatus {
  code: number;
  message: string;
  details?: AnyMessage[];
}

test("INVALID_ARGUMENT: the message text verbatim, google.rpc.BadRequest in grpc-status-details-bin naming each field", async (t) => {
  const requestId = `grpc-js-${randomUUID()}`;
  const bad = await observe(
    observations,
    "GetObservationHistory",
    { deviceId: "nope", assetId: "wägen:7" },
    meta({ "x-request-id": requestId }),
  );
  const message = "device_id: 'nope' is not a valid uuid; asset_id: 'wägen:7' is not a valid uuid";
  t.is(bad.status.code, grpc.status.INVALID_ARGUMENT);
  t.is(bad.error?.code, grpc.status.INVALID_ARGUMENT);
  // Initial metadata is optional here: a trailers-only answer (what a grpc-js server sends) has none.
  t.deepEqual(
    bad.order.filter((e) => e !== "metadata"),
    ["error", "status"],
  );
  t.is(bad.status.details, message, "grpc-message decodes to the text the service wrote");
  t.is(bad.error?.details, message);
  t.is(bad.error?.message, `3 INVALID_ARGUMENT: ${message}`);

  // Trailing metadata: the error's own entries ride with the status.
  const trailers = bad.status.metadata;
  t.deepEqual(trailers.get("x-request-id"), [requestId], "the request id comes back in the trailers of a failed call");
  t.deepEqual(bad.error?.metadata.get("x-request-id"), [requestId], "ServiceError.metadata holds the trailers too");
  const raw = trailers.get("grpc-status-details-bin");
  t.is(raw.length, 1, "one grpc-status-details-bin trailer");
  t.true(Buffer.isBuffer(raw[0]), "a -bin trailer arrives as bytes");

  const status = pkg.google.rpc.Status.deserialize(raw[0]) as RpcStatus;
  t.is(status.code, grpc.status.INVALID_ARGUMENT, "google.rpc.Status.code matches grpc-status");
  t.is(status.message, message, "google.rpc.Status.message matches the message");
  t.deepEqual(
    status.details?.map((d) => d.type_url),
    ["type.googleapis.com/google.rpc.BadRequest"],
  );
  const badRequest = pkg.google.rpc.BadRequest.deserialize(status.details![0]!.value) as {
    fieldViolations?: { field: string; description: string }[];
  };
  t.deepEqual(badRequest.fieldViolations, [
    { field: "device_id", description: "'nope' is not a valid uuid" },
    { field: "asset_id", description: "'wägen:7' is not a valid uuid" },
  ]);
});

// --- a client stream ---------------------------------------------------------------------------

test("StreamIngestObservations: several messages in, one summary out when the client ends its side", async (t) => {
  const device = await createDevice();
  const items = positions(device.identifier, 4);
  items[2] = { ...items[2]!, latitude: 120 };
  const order: string[] = [];
  let initial: grpc.Metadata | undefined;
  const { err, res, status } = await new Promise<{
    err: grpc.ServiceError | null;
    res?: { accepted?: number; duplicates?: number; rejected?: { index: number; field: string; description: string }[] };
    status: grpc.StatusObject;
  }>((resolve) => {
    let answer: { err: grpc.ServiceError | null; res?: never } = { err: null };
    const call: grpc.ClientWritableStream<object> = observations.StreamIngestObservations(
      meta({}, INGEST_KEY),
      (e: grpc.ServiceError | null, r: never) => {
        order.push(e ? "error" : "response");
        answer = { err: e, res: r };
      },
    );
    call.on("metadata", (m: grpc.Metadata) => {
      order.push("metadata");
      initial = m;
    });
    call.on("status", (s: grpc.StatusObject) => {
      order.push("status");
      resolve({ ...answer, status: s });
    });
    for (const item of items) call.write(item);
    // A duplicate of the first: counted, not stored twice.
    call.write(items[0]);
    call.end();
  });
  t.is(err, null, err?.message);
  t.is(status.code, grpc.status.OK);
  t.deepEqual(order, ["metadata", "response", "status"]);
  t.truthy(initial?.get("x-request-id")[0]);
  t.is(res?.accepted, 3);
  t.is(res?.duplicates ?? 0, 1);
  t.deepEqual(res?.rejected, [{ index: 2, field: "latitude", description: "must be between -90 and 90" }]);

  const stored = await unaryCall<{ totalCount: number }>(observations, "GetObservationHistory", { deviceId: device.id }, meta());
  t.is(stored.totalCount, 3, "the accepted ones were stored, once each");
});

test("a client stream without a key: UNAUTHENTICATED, whatever was written", async (t) => {
  const device = await createDevice();
  const err = await new Promise<grpc.ServiceError | null>((resolve) => {
    const call: grpc.ClientWritableStream<object> = observations.StreamIngestObservations(meta({}, null), (e: grpc.ServiceError | null) =>
      resolve(e),
    );
    for (const item of positions(device.identifier, 2)) call.write(item);
    call.end();
  });
  t.is(err?.code, grpc.status.UNAUTHENTICATED);
  const stored = await unaryCall<{ totalCount?: number }>(observations, "GetObservationHistory", { deviceId: device.id }, meta());
  t.is(stored.totalCount ?? 0, 0, "nothing was stored (proto3 leaves a 0 off the wire)");
});
