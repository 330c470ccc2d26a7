// API keys end to end: the tracking REST front with plain fetch and the service host with
// @grpc/grpc-js metadata, in keyed mode (ingest < operator), in open mode, and the start-up refusal
// of an open API on a public address.
import { getOption, hasOption, type DescService } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../../gen/google/api/annotations_pb.js";
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { AuthService } from "../../gen/tracking/v1/auth_pb.js";
import { GeofenceBreachService } from "../../gen/tracking/v1/breach_pb.js";
import { DeviceService } from "../../gen/tracking/v1/device_pb.js";
import { GeofenceService } from "../../gen/tracking/v1/geofence_pb.js";
import { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import { SpeedAlertService } from "../../gen/tracking/v1/speed_alert_pb.js";
import { SystemService } from "../../gen/tracking/v1/system_pb.js";
import { loadMeshConfig } from "../../services/mesh-config.js";
import { ConfigError } from "../../services/runtime/config/index.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { startMesh } from "../../services/mesh.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { sendJson } from "../support/rest.js";

const OPS_KEY = `ops-${randomUUID()}`;
const INGEST_KEY = `feed-${randomUUID()}`;
const UNKNOWN_KEY = `nobody-${randomUUID()}`;
const keysFlag = `--Auth:ApiKeys=${JSON.stringify([
  { Name: "ops", Role: "operator", Key: OPS_KEY },
  { Name: "feed", Role: "ingest", Key: INGEST_KEY },
])}`;

let mesh: TestMesh;
let base: string;

test.before(async () => {
  mesh = await startTestMesh({ flags: [keysFlag] });
  base = mesh.frontUrl("tracking");
});
test.after.always(async () => {
  await mesh?.close();
});

type Json = Record<string, unknown>;

const call = (method: string, path: string, key?: string, body?: unknown, at = base) =>
  sendJson<Json>(`${at}${path}`, method, body, key === undefined ? {} : { "x-api-key": key });

const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function createDevice(): Promise<{ id: string; identifier: string }> {
  const res = await call("POST", "/api/devices", OPS_KEY, { identifier: unique("auth-dev"), label: "auth test" });
  if (res.status !== 200) throw new Error(`device create answered ${res.status}: ${res.text}`);
  return res.body as { id: string; identifier: string };
}

test("no key on an operator route: 401 problem+json", async (t) => {
  const res = await call("GET", "/api/devices");
  t.is(res.status, 401);
  t.is(res.contentType, "application/problem+json");
  t.like(res.body, { status: 401, title: "Unauthorized" });
  t.regex(String(res.body.detail), /X-Api-Key/);
});

test("a wrong key: 401, and the key appears nowhere in the answer", async (t) => {
  const res = await call("GET", "/api/devices", UNKNOWN_KEY);
  t.is(res.status, 401);
  t.is(res.contentType, "application/problem+json");
  t.false(res.text.includes(UNKNOWN_KEY));
});

test("an ingest key on an operator route: 403 problem+json", async (t) => {
  const res = await call("GET", "/api/devices", INGEST_KEY);
  t.is(res.status, 403);
  t.is(res.contentType, "application/problem+json");
  t.like(res.body, { status: 403, title: "Forbidden" });
  t.false(res.text.includes(INGEST_KEY));
});

test("an ingest key may ingest observations; the operator key too", async (t) => {
  const device = await createDevice();
  const observation = {
    deviceIdentifier: device.identifier,
    observedAt: new Date(Date.now() - 60_000).toISOString(),
    latitude: 52.37,
    longitude: 4.89,
  };
  const ingested = await call("POST", "/api/observations/ingest", INGEST_KEY, observation);
  t.is(ingested.status, 200, ingested.text);
  t.like(ingested.body, { deviceId: device.id, source: "ingest" });
  const byOperator = await call("POST", "/api/observations/ingest", OPS_KEY, { ...observation, observedAt: new Date().toISOString() });
  t.is(byOperator.status, 200, byOperator.text);
  t.is((await call("POST", "/api/observations/ingest", undefined, observation)).status, 401);
});

test("auth comes before validation: an invalid body without a key answers 401, not 400", async (t) => {
  t.is((await call("POST", "/api/observations/ingest", undefined, {})).status, 401);
  const withKey = await call("POST", "/api/observations/ingest", INGEST_KEY, {});
  t.is(withKey.status, 400);
});

// Serial (so alone): the embedded database has one connection, and health reports a check that
// waits behind other tests' transactions as unhealthy.
test.serial("health and the service index need no key, and ignore a wrong one", async (t) => {
  for (const key of [undefined, UNKNOWN_KEY, INGEST_KEY]) {
    const health = await call("GET", "/api/health", key);
    t.is(health.status, 200, `health with ${key === undefined ? "no key" : "a key"}`);
    t.is(health.body.status, "Healthy");
    t.is((await call("GET", "/", key)).status, 200);
  }
});

test("GET /api/auth/me: anonymous, ingest, operator, and 401 for an unknown key", async (t) => {
  const anonymous = await call("GET", "/api/auth/me");
  t.is(anonymous.status, 200);
  t.deepEqual(anonymous.body, { authenticated: false, name: null, role: null });
  t.deepEqual((await call("GET", "/api/auth/me", INGEST_KEY)).body, { authenticated: true, name: "feed", role: "ingest" });
  t.deepEqual((await call("GET", "/api/auth/me", OPS_KEY)).body, { authenticated: true, name: "ops", role: "operator" });
  const unknown = await call("GET", "/api/auth/me", UNKNOWN_KEY);
  t.is(unknown.status, 401);
  t.is(unknown.contentType, "application/problem+json");
  t.false(unknown.text.includes(UNKNOWN_KEY));
});

// Every REST route of the tracking services this suite knows, from the contracts, and the policy
// the API documentation promises for it (written out here, not read from the same options).
const openRoutes = new Set(["GET /", "GET /api/health", "GET /api/auth/me"]);
const ingestRoutes = new Set(["POST /api/observations/ingest"]);
const services: DescService[] = [
  SystemService,
  AssetService,
  DeviceService,
  ObservationService,
  GeofenceService,
  GeofenceBreachService,
  SpeedAlertService,
  AuthService,
];

function restRoutes() {
  const routes: { verb: string; template: string; path: string }[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary" || !hasOption(method, http)) continue;
      const rule = getOption(method, http);
      if (rule.pattern.case === undefined || rule.pattern.case === "custom") continue;
      const template = rule.pattern.value;
      // Path variables get an id nobody has: the route is reached, the record is not.
      routes.push({ verb: rule.pattern.case.toUpperCase(), template, path: template.replace(/\{[^}]+\}/g, randomUUID()) });
    }
  }
  return routes;
}

test.serial("every route: operator key passes; ingest key 403 outside ingest; no key 401 outside the open ones", async (t) => {
  const routes = restRoutes();
  t.true(routes.length >= 30, `found ${routes.length} routes`);
  for (const { verb, template, path } of routes) {
    const route = `${verb} ${template}`;
    const body = verb === "GET" || verb === "DELETE" ? undefined : {};
    const anonymous = await call(verb, path, undefined, body);
    const ingest = await call(verb, path, INGEST_KEY, body);
    const operator = await call(verb, path, OPS_KEY, body);
    if (openRoutes.has(route)) {
      t.false([401, 403].includes(anonymous.status), `${route} without a key`);
    } else {
      t.is(anonymous.status, 401, `${route} without a key`);
    }
    if (openRoutes.has(route) || ingestRoutes.has(route)) {
      t.false([401, 403].includes(ingest.status), `${route} with the ingest key answered ${ingest.status}`);
    } else {
      t.is(ingest.status, 403, `${route} with the ingest key`);
    }
    t.false([401, 403].includes(operator.status), `${route} with the operator key answered ${operator.status}: ${operator.text}`);
  }
});

// gRPC callers send the key as metadata, with a client written by others.
function grpcClients() {
  const pkg = loadGrpcPackage(["tracking/v1/device.proto", "tracking/v1/observation.proto", "tracking/v1/auth.proto"]);
  const address = `127.0.0.1:${mesh.servicePort}`;
  const credentials = grpc.credentials.createInsecure();
  return {
    devices: new pkg.tracking.v1.DeviceService(address, credentials) as grpc.Client,
    observations: new pkg.tracking.v1.ObservationService(address, credentials) as grpc.Client,
    auth: new pkg.tracking.v1.AuthService(address, credentials) as grpc.Client,
  };
}

function unary<T>(client: grpc.Client, method: string, request: object, key?: string): Promise<T> {
  const metadata = new grpc.Metadata();
  if (key !== undefined) metadata.set("x-api-key", key);
  return unaryCall<T>(client, method, request, metadata);
}

test("gRPC: the key travels as x-api-key metadata, with the same codes", async (t) => {
  const { devices, observations, auth } = grpcClients();
  t.teardown(() => [devices, observations, auth].forEach((c) => c.close()));

  const missing = await t.throwsAsync<grpc.ServiceError>(unary(devices, "ListDevices", {}));
  t.is(missing!.code, grpc.status.UNAUTHENTICATED);
  const wrong = await t.throwsAsync<grpc.ServiceError>(unary(devices, "ListDevices", {}, UNKNOWN_KEY));
  t.is(wrong!.code, grpc.status.UNAUTHENTICATED);
  t.false(wrong!.details.includes(UNKNOWN_KEY));
  const denied = await t.throwsAsync<grpc.ServiceError>(unary(devices, "ListDevices", {}, INGEST_KEY));
  t.is(denied!.code, grpc.status.PERMISSION_DENIED);
  const listed = await unary<{ items?: unknown[] }>(devices, "ListDevices", {}, OPS_KEY);
  t.true(Array.isArray(listed.items ?? []));

  const device = await createDevice();
  const batch = {
    observations: [
      {
        deviceIdentifier: device.identifier,
        observedAt: { seconds: Math.floor(Date.now() / 1000) - 30 },
        latitude: 48.85,
        longitude: 2.35,
      },
    ],
  };
  const accepted = await unary<{ accepted: number }>(observations, "BatchIngestObservations", batch, INGEST_KEY);
  t.is(accepted.accepted, 1);
  const refused = await t.throwsAsync<grpc.ServiceError>(unary(observations, "BatchIngestObservations", batch));
  t.is(refused!.code, grpc.status.UNAUTHENTICATED);

  t.like(await unary(auth, "GetMe", {}, INGEST_KEY), { authenticated: true, name: "feed", role: "ingest" });
  const me = await unary<{ authenticated: boolean; name?: string }>(auth, "GetMe", {});
  t.falsy(me.authenticated, "false, which proto3 leaves off the wire");
  t.is(me.name, undefined);
});

test("open mode (no key configured): every route answers without a key, /api/auth/me says anonymous", async (t) => {
  const open = await startTestMesh();
  t.teardown(() => open.close());
  const at = open.frontUrl("tracking");
  t.is((await call("GET", "/api/devices", undefined, undefined, at)).status, 200);
  t.is((await call("GET", "/api/system/status", UNKNOWN_KEY, undefined, at)).status, 200, "a key sent to an open API is ignored");
  for (const key of [undefined, UNKNOWN_KEY]) {
    const me = await call("GET", "/api/auth/me", key, undefined, at);
    t.is(me.status, 200);
    t.deepEqual(me.body, { authenticated: false, name: null, role: null });
  }
});

test("an open API on a public address is refused at start, naming the settings", async (t) => {
  const logger = createLogger({ level: "silent" });
  // The check runs before anything opens, so no data directory or database is needed.
  for (const [flags, mode, setting] of [
    [["--Fronts:Host=0.0.0.0"], { kind: "all" }, "Fronts:Host=0.0.0.0"],
    [["--Services:Host=0.0.0.0"], { kind: "all" }, "Services:Host=0.0.0.0"],
    [["--Services:Host=10.0.0.1"], { kind: "service", name: "tracking" }, "Services:Host=10.0.0.1"],
    [["--Fronts:Host=::"], { kind: "gateway" }, "Fronts:Host=::"],
  ] as const) {
    const config = loadMeshConfig({ env: {}, flags: [...flags, "--Telemetry:Exporter=none"], cwd: tmpdir() });
    const error = await t.throwsAsync(startMesh({ config, logger, mode }), { instanceOf: ConfigError });
    t.true(error!.message.includes(`${setting} is not a loopback address`), error!.message);
    t.regex(error!.message, /Auth:AllowAnonymousPublicBind/);
  }
});

function runToExit(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.once("error", reject);
    child.once("exit", (status) => resolve({ status, stderr }));
  });
}

test("the CLI stops with exit code 2 on that refusal", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-auth-cli-"));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // Asynchronously: this process hosts the suite's mesh, which a blocking spawn would freeze.
  const out = await runToExit(
    process.execPath,
    [
      join(process.cwd(), "bin/meshwork.js"),
      `--Data:Dir=${dataDir}`,
      "--Fronts:Host=0.0.0.0",
      "--Services:Port=0",
      "--Fronts:Tracking:Port=0",
      "--Telemetry:Exporter=none",
    ],
    { ...process.env, DATABASE_URL: "", NATS_URL: "" },
  );
  t.is(out.status, 2, out.stderr);
  t.regex(out.stderr, /Fronts:Host=0\.0\.0\.0 is not a loopback address.*Auth:AllowAnonymousPublicBind=true/s);
});

test("Auth:AllowAnonymousPublicBind=true lets an open API bind to 0.0.0.0", async (t) => {
  const open = await startTestMesh({ flags: ["--Fronts:Host=0.0.0.0", "--Auth:AllowAnonymousPublicBind=true"] });
  t.teardown(() => open.close());
  const front = new URL(open.frontUrl("tracking"));
  t.is(front.hostname, "0.0.0.0");
  const res = await call("GET", "/api/devices", undefined, undefined, `http://127.0.0.1:${front.port}`);
  t.is(res.status, 200);
});
