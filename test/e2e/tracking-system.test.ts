// The tracking service's system endpoints through the REST front: GET /, health, the sanitized
// status, the alert summary and demo seeding (idempotence, reset that spares user data, events).
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import {
  AssetCreatedSchema,
  AssetDeletedSchema,
  DeviceCreatedSchema,
  DeviceDeletedSchema,
  DeviceUpdatedSchema,
  GeofenceCreatedSchema,
  GeofenceDeletedSchema,
} from "../../gen/tracking/v1/events_pb.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const packageVersion = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

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

const post = (path: string, body: unknown) =>
  fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function getJson(path: string): Promise<{ status: number; body: Json; contentType: string | null }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: (await res.json()) as Json, contentType: res.headers.get("content-type") };
}

async function seed(reset: boolean): Promise<Json> {
  const res = await post("/api/system/seed", { reset });
  if (res.status !== 200) throw new Error(`seed answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Json;
}

/** Direct SQL for fixtures the REST surface does not expose (seeded flags, alert rows). */
function sql<T = Json>(query: string, params: unknown[] = []): Promise<T[]> {
  return mesh.db!.em().execute<T[]>(query, params);
}

async function seededIds() {
  const ids = async (table: string) =>
    (await sql<{ id: string }>(`select "id" from "${table}" where "is_seeded" order by "id"`)).map((r) => r.id);
  return { assets: await ids("tracking_asset"), devices: await ids("tracking_device"), geofences: await ids("tracking_geofence") };
}

/** Collects every tracking event published from now on, decoded by the caller. */
async function watchEvents(t: import("ava").ExecutionContext) {
  const seen: BusMessage[] = [];
  // One subject filter: a list of them needs NATS 2.10.
  const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.>"] }, (m) => seen.push(m));
  t.teardown(() => sub.stop());
  return seen;
}

// Seeding changes global state, so these run one at a time, in this order, before the rest.

test.serial("two concurrent first seeds create the demo data exactly once", async (t) => {
  const answers = await Promise.all([seed(false), seed(false)]);
  const creator = answers.find((a) => a.alreadySeeded === false);
  const other = answers.find((a) => a.alreadySeeded === true);
  t.deepEqual(creator, { alreadySeeded: false, resetPerformed: false, assetsCreated: 3, devicesCreated: 3, geofencesCreated: 2 });
  t.deepEqual(other, { alreadySeeded: true, resetPerformed: false, assetsCreated: 0, devicesCreated: 0, geofencesCreated: 0 });
  const ids = await seededIds();
  t.is(ids.assets.length, 3);
  t.is(ids.devices.length, 3);
  t.is(ids.geofences.length, 2);
});

test.serial("seeding again without reset changes nothing", async (t) => {
  const before = await seededIds();
  const answer = await seed(false);
  t.deepEqual(answer, { alreadySeeded: true, resetPerformed: false, assetsCreated: 0, devicesCreated: 0, geofencesCreated: 0 });
  t.deepEqual(await seededIds(), before);
});

test.serial("the demo data: two vans and a depot, three linked trackers, the City and Heathrow fences", async (t) => {
  const ids = await seededIds();
  const assets = ((await getJson("/api/assets")).body as unknown as Json[]).filter((a) => ids.assets.includes(String(a.id)));
  t.deepEqual(assets.map((a) => a.category).sort(), ["facility", "vehicle", "vehicle"]);
  t.true(assets.filter((a) => a.category === "vehicle").every((a) => /van/i.test(String(a.name))));

  const devices = ((await getJson("/api/devices")).body as unknown as Json[]).filter((d) => ids.devices.includes(String(d.id)));
  t.deepEqual(devices.map((d) => d.identifier).sort(), ["demo-depot-gateway", "demo-van-alpha", "demo-van-bravo"]);
  t.deepEqual(devices.map((d) => String(d.assetId)).sort(), ids.assets, "each tracker is linked to its own demo asset");

  const fences = await sql<{ name: string; center_latitude: number; center_longitude: number; radius_meters: number; is_active: boolean }>(
    `select * from "tracking_geofence" where "is_seeded" order by "radius_meters"`,
  );
  t.like(fences[0], { center_latitude: 51.5155, center_longitude: -0.0922, radius_meters: 1500, is_active: true });
  t.like(fences[1], { center_latitude: 51.47, center_longitude: -0.4543, radius_meters: 2000, is_active: true });
  t.regex(fences[0]!.name, /London/);
  t.regex(fences[1]!.name, /Heathrow/);
});

test.serial("reset re-creates only seeded rows (new ids), keeps user data and publishes every change", async (t) => {
  const old = await seededIds();
  const [alpha] = await sql<{ id: string; asset_id: string }>(
    `select "id", "asset_id" from "tracking_device" where "identifier" = 'demo-van-alpha'`,
  );

  // User data: an asset, a device tracking a *seeded* asset, a fence, and an observation of a seeded device.
  const userAsset = (await (await post("/api/assets", { name: "user asset" })).json()) as Json;
  const userDeviceRes = await post("/api/devices", { identifier: `user-${randomUUID()}`, assetId: alpha!.asset_id });
  t.is(userDeviceRes.status, 200);
  const userDevice = (await userDeviceRes.json()) as Json;
  const userFenceId = randomUUID();
  await sql(
    `insert into "tracking_geofence" ("id", "name", "center_latitude", "center_longitude", "radius_meters", "is_active", "created_at", "updated_at")
     values (?, 'user fence', 52.2, 0.12, 300, true, now(), now())`,
    [userFenceId],
  );
  await sql(
    `insert into "tracking_observation" ("id", "device_id", "asset_id", "observed_at", "latitude", "longitude", "source", "received_at")
     values (?, ?, ?, now() - interval '1 hour', 51.5, -0.1, 'api', now())`,
    [randomUUID(), alpha!.id, alpha!.asset_id],
  );

  // Everything recorded so far goes out first, so the watch sees only what the reset publishes.
  await mesh.drainOutbox();
  const seen = await watchEvents(t);
  const answer = await seed(true);
  t.deepEqual(answer, { alreadySeeded: false, resetPerformed: true, assetsCreated: 3, devicesCreated: 3, geofencesCreated: 2 });

  const now = await seededIds();
  t.is(now.assets.length, 3);
  t.is(now.devices.length, 3);
  t.is(now.geofences.length, 2);
  for (const kind of ["assets", "devices", "geofences"] as const) {
    t.false(
      now[kind].some((id) => old[kind].includes(id)),
      `${kind}: every seeded row is new`,
    );
  }

  t.is((await fetch(`${base}/api/assets/${String(userAsset.id)}`)).status, 200, "the user asset survives");
  const device = await getJson(`/api/devices/${String(userDevice.id)}`);
  t.is(device.status, 200, "the user device survives");
  t.is(device.body.assetId, null, "its link to the wiped demo asset is cleared");
  t.is((await sql(`select 1 from "tracking_geofence" where "id" = ?`, [userFenceId])).length, 1, "the user fence survives");
  t.is(
    (await sql(`select 1 from "tracking_observation" where "device_id" = ?`, [alpha!.id])).length,
    0,
    "the wiped device's observations go with it",
  );

  await mesh.drainOutbox();
  // On real NATS every test process shares the TRACKING stream: keep only this database's rows.
  const rowIds = await sql<{ id: string }>(
    `select "id" from "tracking_asset" union all select "id" from "tracking_device" union all select "id" from "tracking_geofence"`,
  );
  const ours = new Set([...rowIds.map((r) => r.id), ...old.assets, ...old.devices, ...old.geofences]);
  const ids = (subject: string) => {
    const schema = {
      "tracking.v1.asset.created": AssetCreatedSchema,
      "tracking.v1.asset.deleted": AssetDeletedSchema,
      "tracking.v1.device.created": DeviceCreatedSchema,
      "tracking.v1.device.deleted": DeviceDeletedSchema,
      "tracking.v1.device.updated": DeviceUpdatedSchema,
      "tracking.v1.geofence.created": GeofenceCreatedSchema,
      "tracking.v1.geofence.deleted": GeofenceDeletedSchema,
    }[subject]!;
    return seen
      .filter((m) => m.subject === subject)
      .map((m) => {
        const event = fromBinary(schema, m.data) as unknown as {
          asset?: { id: string };
          device?: { id: string };
          geofence?: { id: string };
        };
        return (event.asset ?? event.device ?? event.geofence)!.id;
      })
      .filter((id) => ours.has(id))
      .sort();
  };
  const expected = 3 + 3 + 2 + 1 + 3 + 3 + 2;
  const subjects = ["asset", "device", "geofence"].flatMap((e) => [`tracking.v1.${e}.created`, `tracking.v1.${e}.deleted`]);
  const ourCount = () => [...subjects, "tracking.v1.device.updated"].reduce((n, subject) => n + ids(subject).length, 0);
  await until(() => ourCount() >= expected, `${expected} seed events`);
  t.deepEqual(ids("tracking.v1.asset.deleted"), old.assets);
  t.deepEqual(ids("tracking.v1.device.deleted"), old.devices);
  t.deepEqual(ids("tracking.v1.geofence.deleted"), old.geofences);
  t.deepEqual(ids("tracking.v1.device.updated"), [String(userDevice.id)]);
  t.deepEqual(ids("tracking.v1.asset.created"), now.assets);
  t.deepEqual(ids("tracking.v1.device.created"), now.devices);
  t.deepEqual(ids("tracking.v1.geofence.created"), now.geofences);
});

test.serial("a reset leaves a demo identifier that a user device has taken meanwhile", async (t) => {
  const [bravo] = await sql<{ id: string }>(`select "id" from "tracking_device" where "identifier" = 'demo-van-bravo'`);
  t.is((await fetch(`${base}/api/devices/${bravo!.id}`, { method: "DELETE" })).status, 200);
  const mine = (await (await post("/api/devices", { identifier: "demo-van-bravo", label: "mine" })).json()) as Json;

  const answer = await seed(true);
  t.like(answer, { resetPerformed: true, assetsCreated: 3, devicesCreated: 2, geofencesCreated: 2 });
  const owner = await getJson(`/api/devices/${String(mine.id)}`);
  t.like(owner.body, { identifier: "demo-van-bravo", label: "mine" });
  t.is((await seededIds()).devices.length, 2);
});

test.serial("the alert summary counts open, total and last-24-hour breaches and speed alerts", async (t) => {
  const before = (await getJson("/api/alerts/summary")).body;
  const deviceId = randomUUID();
  await sql(`insert into "tracking_device" ("id", "identifier", "created_at", "updated_at") values (?, ?, now(), now())`, [
    deviceId,
    `summary-${deviceId}`,
  ]);
  const breach = (occurred: string, acknowledged: boolean) =>
    sql(
      `insert into "tracking_geofence_breach" ("id", "device_id", "observation_id", "geofence_id", "breach_event_type", "latitude", "longitude", "occurred_at", "acknowledged", "created_at")
       values (?, ?, ?, ?, 'Enter', 51.5, -0.1, now() - ?::interval, ?, now())`,
      [randomUUID(), deviceId, randomUUID(), randomUUID(), occurred, acknowledged],
    );
  const speed = (occurred: string, acknowledged: boolean) =>
    sql(
      `insert into "tracking_speed_alert" ("id", "device_id", "observation_id", "speed_kmh", "threshold_kmh", "latitude", "longitude", "occurred_at", "acknowledged", "created_at")
       values (?, ?, ?, 150, 120, 51.5, -0.1, now() - ?::interval, ?, now())`,
      [randomUUID(), deviceId, randomUUID(), occurred, acknowledged],
    );
  await breach("1 hour", false);
  await breach("2 hours", true);
  await breach("3 days", false);
  await speed("10 minutes", false);
  await speed("2 days", true);

  const res = await getJson("/api/alerts/summary");
  t.is(res.status, 200);
  const delta = (key: string) => Number(res.body[key]) - Number(before[key]);
  t.true(
    Object.values(res.body).every((v) => typeof v === "number"),
    "counts are JSON numbers",
  );
  t.is(delta("openBreaches"), 2);
  t.is(delta("totalBreaches"), 3);
  t.is(delta("breachesLast24h"), 2);
  t.is(delta("openSpeedAlerts"), 1);
  t.is(delta("totalSpeedAlerts"), 2);
  t.is(delta("speedAlertsLast24h"), 1);
});

test.serial("health answers 503 with its report, without the failing detail, when a check fails", async (t) => {
  const bus = mesh.bus!;
  const healthy = bus.health;
  bus.health = async () => ({ ok: false, detail: "injected outage at nats://secret-host:4222" });
  t.teardown(() => {
    bus.health = healthy;
  });
  const res = await fetch(`${base}/api/health`);
  t.is(res.status, 503);
  t.is(res.headers.get("content-type"), "application/json");
  const text = await res.text();
  t.like(JSON.parse(text), { status: "Unhealthy", checks: { bus: { status: "Unhealthy" }, database: { status: "Healthy" } } });
  t.false(text.includes("secret-host"), "an infrastructure detail never reaches a public caller");
});

// The rest only reads state (or is refused), so it runs concurrently.

test("GET / names the service, its package version and links to the main paths", async (t) => {
  const { status, body, contentType } = await getJson("/");
  t.is(status, 200);
  t.regex(contentType ?? "", /^application\/json/);
  t.is(body.service, "meshwork-tracking");
  t.is(body.version, packageVersion);
  t.like(body.links, {
    assets: "/api/assets",
    devices: "/api/devices",
    observations: "/api/observations",
    geofences: "/api/geofences",
    breaches: "/api/geofences/breaches",
    speedAlerts: "/api/speed-alerts",
    alertsSummary: "/api/alerts/summary",
    health: "/api/health",
    systemStatus: "/api/system/status",
  });
});

test("GET /api/health reports Healthy with database and bus checks", async (t) => {
  const { status, body } = await getJson("/api/health");
  t.is(status, 200);
  t.is(body.status, "Healthy");
  const checks = body.checks as Record<string, { status: string; detail: string | null }>;
  t.deepEqual(Object.keys(checks).sort(), ["bus", "database"]);
  t.is(checks.database!.status, "Healthy");
  t.is(checks.bus!.status, "Healthy");
});

test("GET /api/system/status is the sanitized configuration", async (t) => {
  const res = await fetch(`${base}/api/system/status`);
  t.is(res.status, 200);
  const text = await res.text();
  const body = JSON.parse(text) as Json;
  t.like(body, {
    service: "meshwork-tracking",
    version: packageVersion,
    environment: mesh.config.environment,
    database: mesh.config.runtime.database.url ? "postgresql" : "embedded",
    bus: mesh.config.runtime.nats.url ? "nats" : "memory",
    // This mesh runs without webhook endpoints or API keys; the stream and feeds are always on.
    features: { simulation: true, webhooks: false, apiKeys: false, sseStream: true, integrations: true },
    settings: { defaultSpeedThresholdKmh: "120", speedAlertCooldownMinutes: "5", exportMaxRows: "50000" },
  });
  // No connection string, credential or local path, whatever the mode.
  for (const secret of ["://", "postgres@", "password", "secret", mesh.config.runtime.data.dir]) {
    t.false(text.toLowerCase().includes(secret.toLowerCase()), `status must not contain ${secret}`);
  }
  if (mesh.config.runtime.database.url) t.false(text.includes(new URL(mesh.config.runtime.database.url).host));
});

test("seed refuses a body without reset, with an unknown property or a wrong type", async (t) => {
  const cases: [string, unknown, string][] = [
    ["missing reset", {}, "reset"],
    ["unknown property", { reset: false, wipeEverything: true }, "wipeEverything"],
    ["wrong type", { reset: "yes" }, "reset"],
  ];
  for (const [what, body, field] of cases) {
    const res = await post("/api/system/seed", body);
    t.is(res.status, 400, what);
    t.is(res.headers.get("content-type"), "application/problem+json", what);
    const problem = (await res.json()) as { errors?: Record<string, string[]> };
    t.true(Array.isArray(problem.errors?.[field]), `${what} names ${field}`);
  }
  const noBody = await fetch(`${base}/api/system/seed`, { method: "POST", headers: { "content-type": "application/json" } });
  t.is(noBody.status, 400, "no body");
});

test("the system endpoints answer only their documented methods", async (t) => {
  t.is((await fetch(`${base}/api/system/status`, { method: "DELETE" })).status, 405);
  t.is((await fetch(`${base}/api/system/seed`)).status, 405);
});
