// Observations through the REST front (create, ingest, reads, every refusal), speed alerts, the
// events they publish, and the gRPC bulk paths with a generated Connect client.
import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate, timestampMs } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { ObservationRecordedSchema, SpeedAlertRaisedSchema } from "../../gen/tracking/v1/events_pb.js";
import { ObservationInputSchema, ObservationService, type ObservationInput } from "../../gen/tracking/v1/observation_pb.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { SpeedAlertEntity } from "../../services/tracking/store/alert-entities.js";
import { ObservationEntity } from "../../services/tracking/store/observation-entity.js";
import { watchBus } from "../support/event-watch.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";
import { sendJson } from "../support/rest.js";

let mesh: TestMesh;
let base: string;
let seen: BusMessage[] = [];
let stopSubscription: () => Promise<void> = async () => {};

test.before(async () => {
  mesh = await startTestMesh();
  base = mesh.frontUrl("tracking");
  ({ seen, stop: stopSubscription } = await watchBus(mesh));
});
test.after.always(async () => {
  await stopSubscription();
  await mesh?.close();
});

type Json = Record<string, unknown>;
const send = (method: string, path: string, body?: unknown) => sendJson<Json & Json[]>(`${base}${path}`, method, body);
const post = (path: string, body: unknown) => send("POST", path, body);
const get = (path: string) => send("GET", path);

let counter = 0;
/** A unique identifier per call, so tests never collide on the global unique index. */
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${counter++}`;

async function newAsset(body: Json = {}) {
  const res = await post("/api/assets", { name: unique("asset"), ...body });
  if (res.status !== 200) throw new Error(`asset: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as unknown as { id: string; name: string };
}
async function newDevice(body: Json = {}) {
  const res = await post("/api/devices", { identifier: unique("dev"), ...body });
  if (res.status !== 200) throw new Error(`device: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as unknown as { id: string; identifier: string };
}

/** Observation times in minutes from a start in the past (each test has its own devices, so they may share it). */
const start = Date.now() - 6 * 60 * 60 * 1000;
const timeline = () => (minutes: number) => new Date(start + minutes * 60_000).toISOString();

const obs = (deviceId: string, observedAt: string, extra: Json = {}) => ({
  deviceId,
  observedAt,
  latitude: 52.37,
  longitude: 4.89,
  ...extra,
});

async function speedAlertsOf(deviceId: string) {
  return mesh.db!.em().find(SpeedAlertEntity, { deviceId }, { orderBy: { occurredAt: "asc" } });
}
async function observationCount(deviceId: string) {
  return mesh.db!.em().count(ObservationEntity, { deviceId });
}

test("POST /api/observations records one and answers 200 with every property; the device's lastSeenAt follows", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const res = await post(
    "/api/observations",
    obs(device.id, at(0), { altitude: 12.5, accuracyMeters: 8, speedKmh: 42, headingDegrees: 270, metadata: '{"battery":80}' }),
  );
  t.is(res.status, 200);
  t.regex(res.type, /^application\/json/);
  t.regex(String(res.body.id), /^[0-9a-f-]{36}$/);
  t.like(res.body, {
    deviceId: device.id,
    observedAt: at(0),
    latitude: 52.37,
    longitude: 4.89,
    altitude: 12.5,
    accuracyMeters: 8,
    speedKmh: 42,
    headingDegrees: 270,
    metadata: '{"battery":80}',
    source: "api",
  });
  t.truthy(Date.parse(String(res.body.receivedAt)));

  const plain = await post("/api/observations", obs(device.id, at(1)));
  t.like(plain.body, { altitude: null, accuracyMeters: null, speedKmh: null, headingDegrees: null, metadata: null });
  t.is((await get(`/api/devices/${device.id}`)).body.lastSeenAt, at(1));
  await post("/api/observations", obs(device.id, at(-5)));
  t.is((await get(`/api/devices/${device.id}`)).body.lastSeenAt, at(1), "an older fix does not move lastSeenAt back");
});

test("refusals: 400 for shape, 422 for impossible values, 404 for an unknown device; nothing is stored", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const cases: [string, unknown, number, string][] = [
    ["unknown property", { ...obs(device.id, at(0)), colour: "red" }, 400, "colour"],
    ["missing latitude", { deviceId: device.id, observedAt: at(0), longitude: 4.89 }, 400, "latitude"],
    ["missing observedAt", { deviceId: device.id, latitude: 52.37, longitude: 4.89 }, 400, "observedAt"],
    ["null latitude", { ...obs(device.id, at(0)), latitude: null }, 400, "latitude"],
    ["missing deviceId", { observedAt: at(0), latitude: 52.37, longitude: 4.89 }, 400, "deviceId"],
    ["bad uuid", obs("not-a-uuid", at(0)), 400, "deviceId"],
    ["wrong type", { ...obs(device.id, at(0)), latitude: "north" }, 400, "latitude"],
    ["latitude out of range", obs(device.id, at(0), { latitude: 90.5 }), 422, "latitude"],
    ["longitude out of range", obs(device.id, at(0), { longitude: -180.01 }), 422, "longitude"],
    ["null island", obs(device.id, at(0), { latitude: 0.02, longitude: 0.03 }), 422, "latitude"],
    ["exact 0,0", obs(device.id, at(0), { latitude: 0, longitude: 0 }), 422, "longitude"],
    ["future", obs(device.id, new Date(Date.now() + 10 * 60_000).toISOString()), 422, "observedAt"],
    ["negative speed", obs(device.id, at(0), { speedKmh: -1 }), 422, "speedKmh"],
    ["speed over 5000", obs(device.id, at(0), { speedKmh: 5001 }), 422, "speedKmh"],
    ["negative accuracy", obs(device.id, at(0), { accuracyMeters: -1 }), 422, "accuracyMeters"],
    ["unknown device", obs("00000000-0000-4000-8000-000000000000", at(0)), 404, "deviceId"],
  ];
  for (const [what, body, status, field] of cases) {
    const res = await post("/api/observations", body);
    t.is(res.status, status, what);
    t.is(res.type, "application/problem+json", what);
    t.like(res.body, { status }, what);
    t.true(
      Array.isArray((res.body.errors as Record<string, unknown> | undefined)?.[field]),
      `${what}: errors names ${field}: ${JSON.stringify(res.body)}`,
    );
  }
  const noBody = await fetch(`${base}/api/observations`, { method: "POST", headers: { "content-type": "application/json" } });
  t.is(noBody.status, 400);
  t.is(await observationCount(device.id), 0);
  t.is((await get(`/api/devices/${device.id}`)).body.lastSeenAt, null);
});

test("a fix 4 minutes ahead is accepted (clock skew); more than 5 is not", async (t) => {
  const device = await newDevice();
  t.is((await post("/api/observations", obs(device.id, new Date(Date.now() + 4 * 60_000).toISOString()))).status, 200);
  t.is((await post("/api/observations", obs(device.id, new Date(Date.now() + 6 * 60_000).toISOString()))).status, 422);
});

test("create needs deviceId; ingest also resolves deviceIdentifier", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const byIdentifier = { deviceIdentifier: device.identifier, observedAt: at(0), latitude: 52.37, longitude: 4.89 };

  const created = await post("/api/observations", byIdentifier);
  t.is(created.status, 400, "create does not resolve identifiers");
  t.true(Array.isArray((created.body.errors as Json).deviceId));

  const ingested = await post("/api/observations/ingest", byIdentifier);
  t.is(ingested.status, 200);
  t.like(ingested.body, { deviceId: device.id, source: "ingest" });

  const byId = await post("/api/observations/ingest", obs(device.id, at(1)));
  t.like(byId.body, { deviceId: device.id, source: "ingest" });

  const unknown = await post("/api/observations/ingest", { ...byIdentifier, deviceIdentifier: unique("nobody") });
  t.is(unknown.status, 404);
  t.true(Array.isArray((unknown.body.errors as Json).deviceIdentifier));

  const neither = await post("/api/observations/ingest", { observedAt: at(2), latitude: 52.37, longitude: 4.89 });
  t.is(neither.status, 400);
  t.true(Array.isArray((neither.body.errors as Json).deviceId));
  t.is(await observationCount(device.id), 2);
});

test("a duplicate (same device, same observedAt) answers the first and creates nothing, raises nothing", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const first = await post("/api/observations", obs(device.id, at(0), { speedKmh: 150 }));
  const again = await post("/api/observations", obs(device.id, at(0), { speedKmh: 190, latitude: 50 }));
  const viaIngest = await post("/api/observations/ingest", {
    deviceIdentifier: device.identifier,
    observedAt: at(0),
    latitude: 1,
    longitude: 1,
  });
  t.is(again.status, 200);
  t.deepEqual(again.body, first.body, "the stored observation, not the new body");
  t.deepEqual(viaIngest.body, first.body);
  t.is(await observationCount(device.id), 1);
  t.is((await speedAlertsOf(device.id)).length, 1, "one alert, from the first");

  await mesh.drainOutbox();
  await until(
    () =>
      seen.some(
        (m) =>
          m.subject === "tracking.v1.observation.recorded" &&
          fromBinary(ObservationRecordedSchema, m.data).observation?.id === first.body.id,
      ),
    "the recorded event",
  );
  const recorded = seen.filter(
    (m) =>
      m.subject === "tracking.v1.observation.recorded" && fromBinary(ObservationRecordedSchema, m.data).observation?.deviceId === device.id,
  );
  t.is(recorded.length, 1, "duplicates publish nothing");
});

test("concurrent duplicates: every caller gets the same stored observation, one row, one alert", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const body = obs(device.id, at(0), { speedKmh: 180 });
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, i) => post(i % 2 ? "/api/observations" : "/api/observations/ingest", body)),
  );
  t.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 200, 200],
  );
  t.is(new Set(answers.map((a) => a.body.id)).size, 1);
  t.is(await observationCount(device.id), 1);
  t.is((await speedAlertsOf(device.id)).length, 1);
});

test("latest: the newest by observedAt, whatever the arrival order; 404 before the first; 400 for a bad id", async (t) => {
  const device = await newDevice();
  const at = timeline();
  t.is((await get(`/api/observations/latest/${device.id}`)).status, 404);
  await post("/api/observations", obs(device.id, at(5), { latitude: 52.5 }));
  await post("/api/observations", obs(device.id, at(1), { latitude: 52.1 }));
  const latest = await get(`/api/observations/latest/${device.id}`);
  t.is(latest.status, 200);
  t.like(latest.body, { deviceId: device.id, observedAt: at(5), latitude: 52.5 });
  t.is((await get("/api/observations/latest/xyz")).status, 400);
  t.is((await get("/api/observations/latest/00000000-0000-4000-8000-000000000000")).status, 404);
});

test("latest-positions: one per device with its newest fix and the device and asset names", async (t) => {
  const asset = await newAsset({ name: unique("Truck") });
  const withAsset = await newDevice({ label: "Cab", assetId: asset.id });
  const bare = await newDevice();
  const silent = await newDevice();
  const at = timeline();
  await post("/api/observations", obs(withAsset.id, at(0), { latitude: 52.1 }));
  await post("/api/observations", obs(withAsset.id, at(2), { latitude: 52.2, speedKmh: 33, headingDegrees: 90 }));
  await post("/api/observations", obs(bare.id, at(1)));

  const res = await get("/api/observations/latest-positions");
  t.is(res.status, 200);
  t.true(Array.isArray(res.body));
  const mine = res.body.filter((p) => [withAsset.id, bare.id, silent.id].includes(String(p.deviceId)));
  t.is(mine.length, 2, "a device without observations has no position");
  t.like(
    mine.find((p) => p.deviceId === withAsset.id),
    {
      deviceIdentifier: withAsset.identifier,
      deviceLabel: "Cab",
      assetId: asset.id,
      assetName: asset.name,
      observedAt: at(2),
      latitude: 52.2,
      longitude: 4.89,
      speedKmh: 33,
      headingDegrees: 90,
    },
  );
  t.like(
    mine.find((p) => p.deviceId === bare.id),
    { deviceIdentifier: bare.identifier, assetId: null, assetName: null },
  );
  const ids = res.body.map((p) => p.deviceId);
  t.is(new Set(ids).size, ids.length, "one entry per device");
});

// Serial: it counts every observation.
test.serial("list: newest first, paged { items, totalCount, page, pageSize }; bad paging is 400", async (t) => {
  const device = await newDevice();
  // Newer than anything else in this file, so they lead the list.
  for (let i = 0; i < 5; i++)
    await post("/api/observations", obs(device.id, new Date(Date.now() - 60_000 + i * 1000).toISOString(), { latitude: 50 + i }));
  const first = await get("/api/observations?page=1&pageSize=2");
  t.is(first.status, 200);
  t.like(first.body, { page: 1, pageSize: 2 });
  const total = Number(first.body.totalCount);
  t.is(total, await mesh.db!.em().count(ObservationEntity, {}));
  t.deepEqual(
    (first.body.items as Json[]).map((o) => o.latitude),
    [54, 53],
  );
  const second = await get("/api/observations?page=2&pageSize=2");
  t.deepEqual(
    (second.body.items as Json[]).map((o) => o.latitude),
    [52, 51],
  );
  const beyond = await get(`/api/observations?page=${total + 1}&pageSize=1`);
  t.deepEqual(beyond.body.items, []);
  const defaults = await get("/api/observations");
  t.like(defaults.body, { page: 1, pageSize: 50 });

  for (const [query, field] of [
    ["page=0", "page"],
    ["pageSize=0", "pageSize"],
    ["pageSize=201", "pageSize"],
    ["page=-1", "page"],
  ]) {
    const res = await get(`/api/observations?${query}`);
    t.is(res.status, 400, query);
    t.true(Array.isArray((res.body.errors as Json)[field!]), query);
  }
  t.is((await get("/api/observations?pageSize=200")).status, 200);
});

test("speed: under is quiet, over raises one alert with the asset's threshold, the cooldown holds 5 minutes", async (t) => {
  const asset = await newAsset({ speedThresholdKmh: 90 });
  const device = await newDevice({ assetId: asset.id });
  const at = timeline();
  await post("/api/observations", obs(device.id, at(0), { speedKmh: 85 }));
  await post("/api/observations", obs(device.id, at(1), { speedKmh: 90 }));
  t.is((await speedAlertsOf(device.id)).length, 0, "at the threshold is not over it");

  const over = await post("/api/observations", obs(device.id, at(2), { speedKmh: 120 }));
  await post("/api/observations", obs(device.id, at(3), { speedKmh: 130 }));
  await post("/api/observations", obs(device.id, at(6.9), { speedKmh: 140 }));
  let alerts = await speedAlertsOf(device.id);
  t.is(alerts.length, 1, "one episode, one alert");
  t.like(alerts[0], { observationId: over.body.id, speedKmh: 120, thresholdKmh: 90, assetId: asset.id, acknowledged: false });
  t.is(alerts[0]!.occurredAt.toISOString(), at(2));

  await post("/api/observations", obs(device.id, at(7), { speedKmh: 100 }));
  alerts = await speedAlertsOf(device.id);
  t.is(alerts.length, 2, "5 minutes after the last alert, another");
  t.like(alerts[1], { speedKmh: 100, thresholdKmh: 90 });
});

test("speed: no asset, or an asset without a threshold, means 120 km/h", async (t) => {
  const noThreshold = await newAsset();
  for (const device of [await newDevice({ assetId: noThreshold.id }), await newDevice()]) {
    const at = timeline();
    await post("/api/observations", obs(device.id, at(0), { speedKmh: 120 }));
    t.is((await speedAlertsOf(device.id)).length, 0);
    await post("/api/observations", obs(device.id, at(1), { speedKmh: 121 }));
    const alerts = await speedAlertsOf(device.id);
    t.is(alerts.length, 1);
    t.is(alerts[0]!.thresholdKmh, 120);
  }
});

test("speed: an observation older than the device's newest is stored but raises nothing", async (t) => {
  const device = await newDevice();
  const at = timeline();
  await post("/api/observations", obs(device.id, at(10), { speedKmh: 50 }));
  const late = await post("/api/observations", obs(device.id, at(2), { speedKmh: 200 }));
  t.is(late.status, 200);
  t.is(await observationCount(device.id), 2);
  t.is((await speedAlertsOf(device.id)).length, 0);
});

test("events: observation.recorded and speed_alert.raised, protobuf payloads with the event id as message id", async (t) => {
  const device = await newDevice();
  const at = timeline();
  const res = await post("/api/observations", obs(device.id, at(0), { speedKmh: 150 }));
  await mesh.drainOutbox();
  const isMine = (m: BusMessage) =>
    (m.subject === "tracking.v1.observation.recorded" &&
      fromBinary(ObservationRecordedSchema, m.data).observation?.deviceId === device.id) ||
    (m.subject === "tracking.v1.speed_alert.raised" && fromBinary(SpeedAlertRaisedSchema, m.data).speedAlert?.deviceId === device.id);
  await until(() => seen.filter(isMine).length >= 2, "two events");
  const mine = seen.filter(isMine);
  t.deepEqual(
    mine.map((m) => m.subject),
    ["tracking.v1.observation.recorded", "tracking.v1.speed_alert.raised"],
  );
  const recorded = fromBinary(ObservationRecordedSchema, mine[0]!.data);
  t.is(recorded.observation?.id, String(res.body.id));
  t.is(recorded.observation?.speedKmh, 150);
  t.is(mine[0]!.id, recorded.eventId);
  const raised = fromBinary(SpeedAlertRaisedSchema, mine[1]!.data);
  t.like(raised.speedAlert, {
    deviceId: device.id,
    deviceIdentifier: device.identifier,
    observationId: String(res.body.id),
    speedKmh: 150,
    thresholdKmh: 120,
  });
});

const grpc = () => createClient(ObservationService, createGrpcTransport({ baseUrl: mesh.serviceUrl }));
const input = (init: Partial<Omit<ObservationInput, "$typeName" | "observedAt">> & { observedAt: string }): ObservationInput =>
  create(ObservationInputSchema, { ...init, observedAt: timestampFromDate(new Date(init.observedAt)) });

test("gRPC BatchIngestObservations: same rules as ingest, refusals by index, duplicates counted", async (t) => {
  const device = await newDevice();
  const other = await newDevice();
  const at = timeline();
  const items = [
    input({ deviceId: device.id, observedAt: at(0), latitude: 52.1, longitude: 4.8, speedKmh: 50 }),
    input({ deviceIdentifier: other.identifier, observedAt: at(0), latitude: 52.1, longitude: 4.8 }),
    input({ deviceId: device.id, observedAt: at(1), latitude: 95, longitude: 4.8 }), // 2: latitude
    input({ deviceId: device.id, observedAt: at(1), latitude: 52.2, longitude: 4.8, speedKmh: 150 }),
    input({ deviceId: device.id, observedAt: at(1), latitude: 52.3, longitude: 4.8 }), // 4: duplicate of 3
    input({ deviceIdentifier: unique("ghost"), observedAt: at(1), latitude: 52.2, longitude: 4.8 }), // 5: unknown
    input({ observedAt: at(1), latitude: 52.2, longitude: 4.8 }), // 6: no device
    input({ deviceId: device.id, observedAt: at(2), latitude: 0, longitude: 0 }), // 7: null island
    input({ deviceId: device.id, observedAt: at(2), latitude: 52.4, longitude: 4.8, speedKmh: 160 }), // cooldown
  ];
  const res = await grpc().batchIngestObservations({ observations: items });
  t.is(res.accepted, 4);
  t.is(res.duplicates, 1);
  t.is(res.speedAlertsRaised, 1);
  t.deepEqual(
    res.rejected.map((r) => [r.index, r.field]),
    [
      [2, "latitude"],
      [5, "device_identifier"],
      [6, "device_id"],
      [7, "latitude"],
      [7, "longitude"],
    ],
  );
  t.is(await observationCount(device.id), 3);
  t.is(await observationCount(other.id), 1);
  const latest = await get(`/api/observations/latest/${device.id}`);
  t.like(latest.body, { observedAt: at(2), latitude: 52.4, source: "bulk" });
  t.is((await speedAlertsOf(device.id)).length, 1);

  const again = await grpc().batchIngestObservations({ observations: items });
  t.is(again.accepted, 0);
  t.is(again.duplicates, 5, "replaying a batch records nothing twice");
});

test("gRPC StreamIngestObservations: a client stream across several chunks, in order per device", async (t) => {
  const devices = [await newDevice(), await newDevice(), await newDevice()];
  const at = timeline();
  const count = 1300;
  async function* stream() {
    for (let i = 0; i < count; i++) {
      const device = devices[i % devices.length]!;
      if (i === 700) yield input({ deviceId: device.id, observedAt: at(0), latitude: 200, longitude: 4.8 });
      else
        yield input({
          deviceId: device.id,
          observedAt: at(i / 60),
          latitude: 52 + i / 10_000,
          longitude: 4.8,
          speedKmh: i % 100 === 0 ? 130 : 60,
        });
    }
  }
  const res = await grpc().streamIngestObservations(stream());
  t.is(res.accepted, count - 1);
  t.is(res.duplicates, 0);
  t.deepEqual(
    res.rejected.map((r) => [r.index, r.field]),
    [[700, "latitude"]],
  );
  // 130 km/h at every 100th item (item i is i seconds in, device i % 3): the first device at 0, 5,
  // 10, 15, 20 minutes (5 alerts, each exactly one cooldown apart), the second at 1.7, 6.7, 16.7
  // (item 700 was refused; 3 alerts), the third at 3.3, 8.3, 13.3, 18.3 (4 alerts).
  const alerts = await Promise.all(devices.map((d) => speedAlertsOf(d.id)));
  t.deepEqual(
    alerts.map((a) => a.length),
    [5, 3, 4],
  );
  t.is(res.speedAlertsRaised, 12);
  for (const device of devices) {
    const latest = await get(`/api/observations/latest/${device.id}`);
    t.is(latest.status, 200);
    t.is((await get(`/api/devices/${device.id}`)).body.lastSeenAt, latest.body.observedAt);
  }
  t.is(
    (await observationCount(devices[0]!.id)) + (await observationCount(devices[1]!.id)) + (await observationCount(devices[2]!.id)),
    count - 1,
  );

  // The outbox writes a chunk's run of observation.recorded events as one row; the bus still gets
  // one message per event, with its own id, each device's in order, alerts between them.
  await mesh.drainOutbox();
  const ids = new Set(devices.map((d) => d.id));
  const recorded = () =>
    seen.flatMap((m) => {
      if (m.subject !== "tracking.v1.observation.recorded") return [];
      const event = fromBinary(ObservationRecordedSchema, m.data);
      return ids.has(event.observation?.deviceId ?? "") ? [{ m, event }] : [];
    });
  const events = await until(() => recorded().length >= count - 1 && recorded(), "an event per observation");
  t.is(events.length, count - 1);
  t.true(
    events.every(({ m, event }) => m.id === event.eventId),
    "each message's id is its event id",
  );
  t.is(new Set(events.map(({ m }) => m.id)).size, count - 1);
  for (const device of devices) {
    const times = events
      .filter(({ event }) => event.observation?.deviceId === device.id)
      .map(({ event }) => timestampMs(event.observation!.observedAt!));
    t.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
      "a device's events in the order observed",
    );
  }
  const raised = seen.filter(
    (m) => m.subject === "tracking.v1.speed_alert.raised" && ids.has(fromBinary(SpeedAlertRaisedSchema, m.data).speedAlert?.deviceId ?? ""),
  );
  t.is(raised.length, 12);
});
