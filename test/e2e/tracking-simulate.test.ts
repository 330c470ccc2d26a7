// POST /api/observations/simulate through the REST front: each preset gives the reference counts
// on a fresh device, reruns do not collide, the temporary fence ends inactive, bad presets and a
// disabled simulator are refused. The preset tracks themselves are checked as pure data first.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { randomUUID } from "node:crypto";
import { GeofenceCreatedSchema, GeofenceUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { seedGeofences } from "../../services/tracking/domain/seed-data.js";
import { findPreset, haversineMeters, planRunTiming, simulationPresets } from "../../services/tracking/domain/simulation-presets.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

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

interface SimulateAnswer {
  observationsCreated: number;
  speedAlertsTriggered: number;
  geofenceBreaches: number;
  deviceId: string;
  deviceIdentifier: string | null;
  assetId: string | null;
  eventLog: string[];
}

const post = (path: string, body: unknown, url = base) =>
  fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function simulate(body: Json): Promise<SimulateAnswer> {
  const res = await post("/api/observations/simulate", body);
  if (res.status !== 200) throw new Error(`simulate answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as SimulateAnswer;
}

function sql<T = Json>(query: string, params: unknown[] = []): Promise<T[]> {
  return mesh.db!.em().execute<T[]>(query, params);
}

const uniqueIdentifier = (what: string) => `sim-test-${what}-${randomUUID().slice(0, 8)}`;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function observationTimes(deviceId: string): Promise<number[]> {
  const rows = await sql<{ observed_at: Date | string }>(
    `select "observed_at" from "tracking_observation" where "device_id" = ? order by "observed_at"`,
    [deviceId],
  );
  return rows.map((r) => new Date(r.observed_at).getTime());
}

// ---- The presets as data -------------------------------------------------------------------

const position = (p: { centerLatitude: number; centerLongitude: number }) => ({ latitude: p.centerLatitude, longitude: p.centerLongitude });

test("preset tracks: reference sizes and speeds, 30 s apart", (t) => {
  t.deepEqual(
    simulationPresets.map((p) => [p.preset, p.name, p.points.length]),
    [
      [0, "NormalRoute", 10],
      [1, "SpeedViolation", 8],
      [2, "GeofenceEntryExit", 10],
    ],
  );
  for (const preset of simulationPresets) {
    t.deepEqual(
      preset.points.map((p) => p.offsetSeconds),
      preset.points.map((_, i) => i * 30),
      preset.name,
    );
  }
  t.true(findPreset(0)!.points.every((p) => p.speedKmh >= 45 && p.speedKmh <= 80));
  const fast = findPreset(1)!.points.filter((p) => p.speedKmh > 120);
  t.true(fast.length >= 2, "several points over the default threshold: one episode");
  t.true(fast.every((p) => p.speedKmh >= 140 && p.speedKmh <= 160));
  t.is(findPreset(3), undefined);
});

test("preset tracks: GeofenceEntryExit enters and leaves its fence once; no track touches a demo fence", (t) => {
  const entryExit = findPreset(2)!;
  const fence = entryExit.fence!;
  t.like(fence, { centerLatitude: 51.51, centerLongitude: -0.1, radiusMeters: 1000 });
  const inside = entryExit.points.map((p) => haversineMeters(p, position(fence)) <= fence.radiusMeters);
  const changes = inside.filter((v, i) => i > 0 && v !== inside[i - 1]).length;
  t.false(inside[0], "starts outside");
  t.false(inside.at(-1), "ends outside");
  t.is(changes, 2, "one enter, one exit");
  // Exits must hold even for an accuracy-aware rule (distance - accuracy > radius).
  for (const [i, p] of entryExit.points.entries()) {
    const d = haversineMeters(p, position(fence));
    if (!inside[i]) t.true(d - p.accuracyMeters > fence.radiusMeters, `point ${i + 1} clearly outside`);
  }
  for (const preset of simulationPresets) {
    for (const p of preset.points) {
      for (const demo of seedGeofences) {
        t.true(haversineMeters(p, position(demo)) > demo.radiusMeters + 100, `${preset.name} stays clear of ${demo.name}`);
      }
      t.true(haversineMeters(p, { latitude: 0, longitude: 0 }) > 10_000);
    }
  }
});

test("run timing: 10 minutes ago, after the device's newest observation when that fits, else flagged", (t) => {
  const now = new Date("2030-01-01T12:00:00.750Z");
  t.deepEqual(planRunTiming(now, null, 10), { start: new Date("2030-01-01T11:50:00.000Z"), inOrder: true });
  t.deepEqual(planRunTiming(now, new Date("2030-01-01T11:00:00Z"), 10), { start: new Date("2030-01-01T11:50:00.000Z"), inOrder: true });
  t.deepEqual(planRunTiming(now, new Date("2030-01-01T11:54:30.200Z"), 10), {
    start: new Date("2030-01-01T11:54:31.000Z"),
    inOrder: true,
  });
  t.deepEqual(planRunTiming(now, new Date("2030-01-01T11:58:00Z"), 10), { start: new Date("2030-01-01T11:50:00.000Z"), inOrder: false });
});

// ---- Through the REST front ----------------------------------------------------------------

test("preset 0 NormalRoute: 10 observations, no alert; the default device is created with an asset", async (t) => {
  const answer = await simulate({ preset: 0 });
  t.like(answer, { observationsCreated: 10, speedAlertsTriggered: 0, geofenceBreaches: 0, deviceIdentifier: "sim-normal-route" });
  t.regex(answer.deviceId, uuid);
  t.regex(String(answer.assetId), uuid);
  t.true(answer.eventLog.length >= 10);

  const device = (await (await fetch(`${base}/api/devices/${answer.deviceId}`)).json()) as Json;
  t.like(device, { identifier: "sim-normal-route", assetId: answer.assetId });
  const times = await observationTimes(answer.deviceId);
  t.is(times.length, 10);
  t.deepEqual(
    times.slice(1).map((time, i) => time - times[i]!),
    Array(9).fill(30_000),
  );
  const startsAgo = Date.now() - times[0]!;
  t.true(startsAgo >= 9 * 60_000 && startsAgo <= 11 * 60_000, "the run starts 10 minutes ago");
  const sources = await sql<{ source: string }>(`select distinct "source" from "tracking_observation" where "device_id" = ?`, [
    answer.deviceId,
  ]);
  t.deepEqual(sources, [{ source: "simulation" }]);
});

test("preset 1 SpeedViolation: 8 observations, the cooldown makes one speed alert", async (t) => {
  const answer = await simulate({ preset: 1, deviceIdentifier: uniqueIdentifier("speed") });
  t.like(answer, { observationsCreated: 8, speedAlertsTriggered: 1, geofenceBreaches: 0 });
  const alerts = await sql<{ speed_kmh: number; threshold_kmh: number }>(
    `select "speed_kmh", "threshold_kmh" from "tracking_speed_alert" where "device_id" = ?`,
    [answer.deviceId],
  );
  t.is(alerts.length, 1);
  t.true(alerts[0]!.speed_kmh >= 140 && alerts[0]!.speed_kmh <= 160);
  t.is(alerts[0]!.threshold_kmh, 120);
});

test("preset 2 GeofenceEntryExit: 10 observations, Enter then Exit on a temporary fence left inactive", async (t) => {
  const seen: BusMessage[] = [];
  const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.>"] }, (m) => seen.push(m));
  t.teardown(() => sub.stop());

  const answer = await simulate({ preset: 2, deviceIdentifier: uniqueIdentifier("fence") });
  t.like(answer, { observationsCreated: 10, speedAlertsTriggered: 0, geofenceBreaches: 2 });

  const breaches = await sql<{ geofence_id: string; breach_event_type: string }>(
    `select "geofence_id", "breach_event_type" from "tracking_geofence_breach" where "device_id" = ? order by "occurred_at"`,
    [answer.deviceId],
  );
  t.deepEqual(
    breaches.map((b) => b.breach_event_type),
    ["Enter", "Exit"],
  );
  t.is(breaches[0]!.geofence_id, breaches[1]!.geofence_id);
  const [fence] = await sql<{ center_latitude: number; center_longitude: number; radius_meters: number; is_active: boolean }>(
    `select * from "tracking_geofence" where "id" = ?`,
    [breaches[0]!.geofence_id],
  );
  t.like(fence, { center_latitude: 51.51, center_longitude: -0.1, radius_meters: 1000, is_active: false });

  await mesh.drainOutbox();
  const fenceId = breaches[0]!.geofence_id;
  const fenceEvents = () =>
    seen.flatMap((m) => {
      if (m.subject === "tracking.v1.geofence.created") {
        const g = fromBinary(GeofenceCreatedSchema, m.data).geofence;
        return g?.id === fenceId ? [{ subject: m.subject, isActive: g.isActive }] : [];
      }
      if (m.subject === "tracking.v1.geofence.updated") {
        const g = fromBinary(GeofenceUpdatedSchema, m.data).geofence;
        return g?.id === fenceId ? [{ subject: m.subject, isActive: g.isActive }] : [];
      }
      return [];
    });
  await until(() => fenceEvents().length >= 2, "the temporary fence's two events");
  t.deepEqual(fenceEvents(), [
    { subject: "tracking.v1.geofence.created", isActive: true },
    { subject: "tracking.v1.geofence.updated", isActive: false },
  ]);
});

test("running a preset twice on one device does not collide on observedAt", async (t) => {
  const deviceIdentifier = uniqueIdentifier("rerun");
  const first = await simulate({ preset: 2, deviceIdentifier });
  const second = await simulate({ preset: 2, deviceIdentifier });
  t.is(second.deviceId, first.deviceId);
  t.like(second, { observationsCreated: 10, geofenceBreaches: 2 }, "the second run follows the first in time, on its own new fence");
  const times = await observationTimes(first.deviceId);
  t.is(times.length, 20);
  t.is(new Set(times).size, 20);
  t.true(times.at(-1)! <= Date.now(), "no point lies in the future");
});

test("concurrent runs: one new identifier becomes one device; two fence runs each see only their own fence", async (t) => {
  const shared = uniqueIdentifier("together");
  const [a, b, fenceA, fenceB] = await Promise.all([
    simulate({ preset: 0, deviceIdentifier: shared }),
    simulate({ preset: 0, deviceIdentifier: shared }),
    simulate({ preset: 2, deviceIdentifier: uniqueIdentifier("fence-a") }),
    simulate({ preset: 2, deviceIdentifier: uniqueIdentifier("fence-b") }),
  ]);
  t.is(a.deviceId, b.deviceId);
  t.is(a.observationsCreated + b.observationsCreated, 20);
  t.is(new Set(await observationTimes(a.deviceId)).size, 20);
  t.is((await sql(`select 1 from "tracking_device" where "identifier" = ?`, [shared])).length, 1);
  t.is(fenceA.geofenceBreaches, 2);
  t.is(fenceB.geofenceBreaches, 2);
});

test("deviceIdentifier picks an existing device (and its asset, here none)", async (t) => {
  const identifier = uniqueIdentifier("existing");
  const created = await post("/api/devices", { identifier, label: "mine" });
  t.is(created.status, 200);
  const device = (await created.json()) as Json;
  const answer = await simulate({ preset: 0, deviceIdentifier: identifier });
  t.like(answer, { deviceId: device.id, deviceIdentifier: identifier, assetId: null, observationsCreated: 10 });
});

test("a preset outside 0..2, an unknown property or a wrong type answers 400 naming the field", async (t) => {
  const cases: [string, unknown, string][] = [
    ["preset 3", { preset: 3 }, "preset"],
    ["preset -1", { preset: -1 }, "preset"],
    ["unknown property", { preset: 0, speed: 300 }, "speed"],
    ["wrong type", { preset: "fast" }, "preset"],
    ["identifier too long", { preset: 0, deviceIdentifier: "x".repeat(201) }, "deviceIdentifier"],
  ];
  for (const [what, body, field] of cases) {
    const res = await post("/api/observations/simulate", body);
    t.is(res.status, 400, what);
    t.is(res.headers.get("content-type"), "application/problem+json", what);
    const problem = (await res.json()) as { errors?: Record<string, string[]> };
    t.true(Array.isArray(problem.errors?.[field]), `${what} names ${field}`);
  }
});

test("with Tracking:SimulationEnabled=false simulate answers 403 and the status says so", async (t) => {
  const off = await startTestMesh({ flags: ["--Tracking:SimulationEnabled=false"] });
  t.teardown(() => off.close());
  const url = off.frontUrl("tracking");
  const res = await post("/api/observations/simulate", { preset: 0 }, url);
  t.is(res.status, 403);
  t.is(res.headers.get("content-type"), "application/problem+json");
  const status = (await (await fetch(`${url}/api/system/status`)).json()) as { features: Record<string, boolean> };
  t.false(status.features.simulation);
  const devices = await off.db!.em().execute<{ n: string | number }[]>(`select count(*) as "n" from "tracking_device"`);
  t.is(Number(devices[0]!.n), 0, "nothing was created");
});
