// Geofences through the REST front (CRUD, refusals, events) and the enter/exit scenarios the
// observation engine must get right, including a fence that reaches this instance only through
// the bus, as one created by another instance would.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { randomUUID } from "node:crypto";
import {
  GeofenceBreachDetectedSchema,
  GeofenceCreatedSchema,
  GeofenceDeletedSchema,
  GeofenceUpdatedSchema,
} from "../../gen/tracking/v1/events_pb.js";
import { GeofenceSchema } from "../../gen/tracking/v1/geofence_pb.js";
import { ObservationInputSchema, ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { BreachEntity } from "../../services/tracking/store/alert-entities.js";
import { GeofenceEntity, GeofenceStateEntity, type GeofenceRow } from "../../services/tracking/store/geofence-entity.js";
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

let counter = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${counter++}`;

async function newDevice() {
  const res = await send("POST", "/api/devices", { identifier: unique("dev") });
  if (res.status !== 200) throw new Error(`device: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as unknown as { id: string; identifier: string };
}

interface Fence {
  id: string;
  name: string;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
}
async function newFence(body: Json) {
  const res = await send("POST", "/api/geofences", { name: unique("fence"), ...body });
  if (res.status !== 200) throw new Error(`geofence: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as unknown as Fence;
}

// Each scenario gets its own patch of the map, so fences of one never touch another's devices.
let area = 0;
const newArea = () => {
  const n = area++;
  return { lat: 40 + (n % 10) * 1.5, lon: -60 + Math.floor(n / 10) * 3 };
};
/** A position `meters` north of a point (0.001 degrees of latitude is about 111.2 m). */
const north = (p: { lat: number; lon: number }, meters: number) => ({ latitude: p.lat + meters / 111_195, longitude: p.lon });

const start = Date.now() - 3 * 60 * 60 * 1000;
const at = (seconds: number) => new Date(start + seconds * 1000).toISOString();

async function fix(deviceId: string, seconds: number, position: { latitude: number; longitude: number }, extra: Json = {}) {
  const res = await send("POST", "/api/observations", { deviceId, observedAt: at(seconds), ...position, ...extra });
  if (res.status !== 200) throw new Error(`observation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as unknown as { id: string };
}

async function breachesOf(deviceId: string) {
  const rows = await mesh.db!.em().find(BreachEntity, { deviceId }, { orderBy: { occurredAt: "asc", createdAt: "asc" } });
  return rows;
}
const kinds = async (deviceId: string, fenceId?: string) =>
  (await breachesOf(deviceId)).filter((b) => !fenceId || b.geofenceId === fenceId).map((b) => b.breachEventType);

test("create answers 200 with every property (isActive defaults to true); list is a JSON array, newest first", async (t) => {
  const first = await newFence({ centerLatitude: 10, centerLongitude: 10, radiusMeters: 100 });
  const res = await send("POST", "/api/geofences", {
    name: "Depot",
    description: "yard",
    centerLatitude: 51.47,
    centerLongitude: -0.45,
    radiusMeters: 2000,
  });
  t.is(res.status, 200);
  t.regex(String(res.body.id), /^[0-9a-f-]{36}$/);
  t.like(res.body, {
    name: "Depot",
    description: "yard",
    centerLatitude: 51.47,
    centerLongitude: -0.45,
    radiusMeters: 2000,
    isActive: true,
  });
  t.is(res.body.createdAt, res.body.updatedAt);
  const list = await send("GET", "/api/geofences");
  t.is(list.status, 200);
  t.true(Array.isArray(list.body));
  const ids = list.body.map((g) => g.id);
  t.true(ids.indexOf(res.body.id) < ids.indexOf(first.id), "newest first");
  const inactive = await send("POST", "/api/geofences", {
    centerLatitude: 1,
    centerLongitude: 1,
    radiusMeters: 5,
    isActive: false,
    name: null,
  });
  t.like(inactive.body, { isActive: false, name: null, description: null });
});

test("PUT replaces every field; DELETE answers { id, deleted }; then both 404; there is no GET of one", async (t) => {
  const fence = await newFence({ description: "d", centerLatitude: 20, centerLongitude: 20, radiusMeters: 300 });
  const put = await send("PUT", `/api/geofences/${fence.id}`, {
    name: "moved",
    centerLatitude: 21,
    centerLongitude: 22,
    radiusMeters: 450,
  });
  t.is(put.status, 200);
  t.like(put.body, {
    id: fence.id,
    name: "moved",
    description: null,
    centerLatitude: 21,
    centerLongitude: 22,
    radiusMeters: 450,
    isActive: true,
  });
  t.true(Date.parse(String(put.body.updatedAt)) >= Date.parse(String(put.body.createdAt)));
  const off = await send("PUT", `/api/geofences/${fence.id}`, {
    centerLatitude: 21,
    centerLongitude: 22,
    radiusMeters: 450,
    isActive: false,
  });
  t.is(off.body.isActive, false);

  t.not((await send("GET", `/api/geofences/${fence.id}`)).status, 200);
  const del = await send("DELETE", `/api/geofences/${fence.id}`);
  t.is(del.status, 200);
  t.deepEqual(del.body, { id: fence.id, deleted: true });
  t.is((await send("DELETE", `/api/geofences/${fence.id}`)).status, 404);
  t.is((await send("PUT", `/api/geofences/${fence.id}`, { centerLatitude: 1, centerLongitude: 1, radiusMeters: 1 })).status, 404);
  t.false((await send("GET", "/api/geofences")).body.some((g) => g.id === fence.id));
});

test("refusals: 400 for shape, 422 for ranges and radius, each naming the field", async (t) => {
  const good = { centerLatitude: 30, centerLongitude: 30, radiusMeters: 100 };
  const cases: [string, string, unknown, number, string][] = [
    ["POST", "/api/geofences", { ...good, colour: "red" }, 400, "colour"],
    ["POST", "/api/geofences", { centerLatitude: 30, centerLongitude: 30 }, 400, "radiusMeters"],
    ["POST", "/api/geofences", { ...good, centerLatitude: null }, 400, "centerLatitude"],
    ["POST", "/api/geofences", { ...good, radiusMeters: "big" }, 400, "radiusMeters"],
    ["POST", "/api/geofences", { ...good, centerLatitude: 90.1 }, 422, "centerLatitude"],
    ["POST", "/api/geofences", { ...good, centerLongitude: 181 }, 422, "centerLongitude"],
    ["POST", "/api/geofences", { ...good, radiusMeters: 0 }, 422, "radiusMeters"],
    ["POST", "/api/geofences", { ...good, radiusMeters: -10 }, 422, "radiusMeters"],
    ["PUT", "/api/geofences/not-a-uuid", good, 400, "id"],
    ["DELETE", "/api/geofences/not-a-uuid", undefined, 400, "id"],
  ];
  for (const [method, path, body, status, field] of cases) {
    const res = await send(method, path, body);
    t.is(res.status, status, `${method} ${JSON.stringify(body)}`);
    t.is(res.type, "application/problem+json");
    t.true(Array.isArray((res.body.errors as Json | undefined)?.[field]), `${field}: ${JSON.stringify(res.body)}`);
  }
  const fence = await newFence(good);
  const bad = await send("PUT", `/api/geofences/${fence.id}`, { ...good, radiusMeters: 0 });
  t.is(bad.status, 422);
  t.is((await send("GET", "/api/geofences")).body.find((g) => g.id === fence.id)?.radiusMeters, 100, "unchanged");
});

test("create, update and delete publish tracking.v1.geofence.* with the fence", async (t) => {
  const fence = await newFence({ centerLatitude: 12, centerLongitude: 12, radiusMeters: 50 });
  await send("PUT", `/api/geofences/${fence.id}`, { name: "renamed", centerLatitude: 12, centerLongitude: 12, radiusMeters: 60 });
  await send("DELETE", `/api/geofences/${fence.id}`);
  await mesh.drainOutbox();
  const decode = (m: BusMessage) =>
    m.subject === "tracking.v1.geofence.created"
      ? fromBinary(GeofenceCreatedSchema, m.data).geofence
      : m.subject === "tracking.v1.geofence.updated"
        ? fromBinary(GeofenceUpdatedSchema, m.data).geofence
        : m.subject === "tracking.v1.geofence.deleted"
          ? fromBinary(GeofenceDeletedSchema, m.data).geofence
          : undefined;
  const mine = () => seen.filter((m) => decode(m)?.id === fence.id);
  await until(() => mine().length >= 3, "three geofence events");
  t.deepEqual(
    mine().map((m) => m.subject),
    ["tracking.v1.geofence.created", "tracking.v1.geofence.updated", "tracking.v1.geofence.deleted"],
  );
  t.like(decode(mine()[1]!), { name: "renamed", radiusMeters: 60 });
});

test("enter, stay inside (no new breach), exit, re-enter", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 2000));
  t.deepEqual(await kinds(device.id), [], "first fix outside: nothing");
  const entered = await fix(device.id, 10, north(p, 400));
  await fix(device.id, 20, north(p, 100));
  await fix(device.id, 30, north(p, -300));
  t.deepEqual(await kinds(device.id), ["Enter"], "staying inside adds nothing");
  await fix(device.id, 40, north(p, 800));
  await fix(device.id, 50, north(p, 900));
  await fix(device.id, 60, north(p, 0));
  const breaches = await breachesOf(device.id);
  t.deepEqual(
    breaches.map((b) => b.breachEventType),
    ["Enter", "Exit", "Enter"],
  );
  t.like(breaches[0], { geofenceId: fence.id, observationId: entered.id, acknowledged: false });
  t.is(breaches[0]!.occurredAt.toISOString(), at(10));
  t.true(Math.abs(breaches[0]!.latitude - north(p, 400).latitude) < 1e-9);
});

test("first fix inside a fence is an Enter", async (t) => {
  const p = newArea();
  await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 300 });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 10));
  t.deepEqual(await kinds(device.id), ["Enter"]);
});

test("accuracy at the edge: a fuzzy fix just outside neither enters nor, once inside, exits", async (t) => {
  const p = newArea();
  await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 520), { accuracyMeters: 50 });
  t.deepEqual(await kinds(device.id), [], "entering needs the fix itself inside");
  await fix(device.id, 10, north(p, 480), { accuracyMeters: 50 });
  t.deepEqual(await kinds(device.id), ["Enter"]);
  // 20-40 m outside but the accuracy disc still reaches in: GPS noise, not a departure.
  await fix(device.id, 20, north(p, 520), { accuracyMeters: 50 });
  await fix(device.id, 30, north(p, 540), { accuracyMeters: 45 });
  await fix(device.id, 40, north(p, 495), { accuracyMeters: 50 });
  await fix(device.id, 50, north(p, 530), { accuracyMeters: 50 });
  t.deepEqual(await kinds(device.id), ["Enter"], "no flapping");
  await fix(device.id, 60, north(p, 530), { accuracyMeters: 20 });
  t.deepEqual(await kinds(device.id), ["Enter", "Exit"], "out by more than the accuracy");
});

test("out of order: an older fix is stored but moves no state", async (t) => {
  const p = newArea();
  await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const device = await newDevice();
  await fix(device.id, 100, north(p, 0));
  t.deepEqual(await kinds(device.id), ["Enter"]);
  await fix(device.id, 50, north(p, 5000));
  t.deepEqual(await kinds(device.id), ["Enter"], "the late fix outside is not an Exit");
  await fix(device.id, 110, north(p, 100));
  t.deepEqual(await kinds(device.id), ["Enter"], "still inside: no second Enter");
  await fix(device.id, 120, north(p, 5000));
  t.deepEqual(await kinds(device.id), ["Enter", "Exit"]);
  const late = await send("GET", `/api/observations/latest/${device.id}`);
  t.is(late.body.observedAt, at(120));
});

test("concurrent fixes of one device inside a fence give exactly one Enter", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 800 });
  const device = await newDevice();
  await Promise.all(Array.from({ length: 8 }, (_, i) => fix(device.id, i, north(p, i * 10))));
  t.deepEqual(await kinds(device.id, fence.id), ["Enter"]);
});

test("two devices in one fence each get their own breaches", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 1000 });
  const a = await newDevice();
  const b = await newDevice();
  await fix(a.id, 0, north(p, 100));
  await fix(b.id, 0, north(p, -100));
  await fix(a.id, 10, north(p, 3000));
  await fix(b.id, 10, north(p, 200));
  t.deepEqual(await kinds(a.id, fence.id), ["Enter", "Exit"]);
  t.deepEqual(await kinds(b.id, fence.id), ["Enter"]);
});

test("overlapping fences: one fix enters both; leaving one keeps the other", async (t) => {
  const p = newArea();
  const small = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 300 });
  const large = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 2000 });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 100));
  t.deepEqual((await kinds(device.id)).sort(), ["Enter", "Enter"]);
  await fix(device.id, 10, north(p, 1000));
  t.deepEqual(await kinds(device.id, small.id), ["Enter", "Exit"]);
  t.deepEqual(await kinds(device.id, large.id), ["Enter"]);
  await fix(device.id, 20, north(p, 5000));
  t.deepEqual(await kinds(device.id, large.id), ["Enter", "Exit"]);
});

test("a fence moved away still produces the Exit, though the fix is nowhere near its new place", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 0));
  await send("PUT", `/api/geofences/${fence.id}`, { centerLatitude: p.lat + 0.7, centerLongitude: p.lon, radiusMeters: 500 });
  await fix(device.id, 10, north(p, 0));
  t.deepEqual(await kinds(device.id), ["Enter", "Exit"]);
  await fix(device.id, 20, { latitude: p.lat + 0.7, longitude: p.lon });
  t.deepEqual(await kinds(device.id), ["Enter", "Exit", "Enter"], "and it is found at its new place");
});

test("inactive fences are not evaluated; deactivating forgets who was inside; deleting stops it", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500, isActive: false });
  const device = await newDevice();
  await fix(device.id, 0, north(p, 0));
  t.deepEqual(await kinds(device.id), [], "inactive: no Enter");

  const body = { centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 };
  await send("PUT", `/api/geofences/${fence.id}`, { ...body, isActive: true });
  await fix(device.id, 10, north(p, 0));
  t.deepEqual(await kinds(device.id), ["Enter"]);

  await send("PUT", `/api/geofences/${fence.id}`, { ...body, isActive: false });
  t.is(await mesh.db!.em().count(GeofenceStateEntity, { geofenceId: fence.id }), 0);
  await fix(device.id, 20, north(p, 5000));
  t.deepEqual(await kinds(device.id), ["Enter"], "no Exit from an inactive fence");
  await send("PUT", `/api/geofences/${fence.id}`, { ...body, isActive: true });
  await fix(device.id, 30, north(p, 5000));
  t.deepEqual(await kinds(device.id), ["Enter"], "reactivated with a clean slate: outside is nothing");

  await fix(device.id, 40, north(p, 0));
  t.deepEqual(await kinds(device.id), ["Enter", "Enter"]);
  await send("DELETE", `/api/geofences/${fence.id}`);
  await fix(device.id, 50, north(p, 5000));
  t.deepEqual(await kinds(device.id), ["Enter", "Enter"], "a deleted fence raises nothing; its breaches stay");
});

test("a fence across the antimeridian is entered from either side", async (t) => {
  const fence = await newFence({ centerLatitude: -16.8, centerLongitude: 180, radiusMeters: 5000 });
  const device = await newDevice();
  await fix(device.id, 0, { latitude: -16.8, longitude: -179.99 });
  await fix(device.id, 10, { latitude: -16.8, longitude: 179.99 });
  await fix(device.id, 20, { latitude: -16.8, longitude: 179.8 });
  t.deepEqual(await kinds(device.id, fence.id), ["Enter", "Exit"]);
});

test("gRPC bulk ingest evaluates fences item by item, in order, as single records would", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const a = await newDevice();
  const b = await newDevice();
  const item = (deviceId: string, seconds: number, meters: number) =>
    create(ObservationInputSchema, { deviceId, observedAt: timestampFromDate(new Date(at(seconds))), ...north(p, meters) });
  const client = createClient(ObservationService, createGrpcTransport({ baseUrl: mesh.serviceUrl }));
  const res = await client.batchIngestObservations({
    observations: [
      item(a.id, 0, 0), // Enter
      item(b.id, 0, 3000),
      item(a.id, 10, 100),
      item(b.id, 10, 0), // Enter
      item(a.id, 20, 2000), // Exit
      item(a.id, 15, 0), // late: stored, no state change
      item(a.id, 30, 0), // Enter
    ],
  });
  t.like(res, { accepted: 7, duplicates: 0, breachesDetected: 4 });
  t.deepEqual(await kinds(a.id, fence.id), ["Enter", "Exit", "Enter"]);
  t.deepEqual(await kinds(b.id, fence.id), ["Enter"]);
});

test("breach.detected events carry the device identifier, the fence name and the kind", async (t) => {
  const p = newArea();
  const fence = await newFence({ centerLatitude: p.lat, centerLongitude: p.lon, radiusMeters: 500 });
  const device = await newDevice();
  const entered = await fix(device.id, 0, north(p, 0));
  await fix(device.id, 10, north(p, 2000));
  await mesh.drainOutbox();
  const mine = () =>
    seen
      .filter((m) => m.subject === "tracking.v1.breach.detected")
      .map((m) => ({ m, breach: fromBinary(GeofenceBreachDetectedSchema, m.data).breach }))
      .filter((x) => x.breach?.deviceId === device.id);
  await until(() => mine().length >= 2, "two breach events");
  const [enter, exit] = mine();
  t.like(enter!.breach, {
    geofenceId: fence.id,
    geofenceName: fence.name,
    deviceIdentifier: device.identifier,
    breachEventType: "Enter",
    observationId: entered.id,
    acknowledged: false,
  });
  t.is(exit!.breach?.breachEventType, "Exit");
  t.is(enter!.m.id, fromBinary(GeofenceBreachDetectedSchema, enter!.m.data).eventId);
});

test("fences created and moved by another instance reach this one's index through the bus", async (t) => {
  const p = newArea();
  const device = await newDevice();
  // Another instance commits the fence to the shared database and its outbox relay publishes the
  // event; here the row is written directly and the event published as that relay would.
  const createdAt = new Date();
  const row: GeofenceRow = {
    id: randomUUID(),
    name: "elsewhere",
    description: null,
    centerLatitude: p.lat,
    centerLongitude: p.lon,
    radiusMeters: 500,
    isActive: true,
    isSeeded: false,
    createdAt,
    updatedAt: createdAt,
  };
  await mesh.db!.em().insert(GeofenceEntity, row);
  await fix(device.id, 0, north(p, 0));
  t.deepEqual(await kinds(device.id), [], "not in this instance's index yet: the fix finds no candidate");

  const publish = async (subject: string, schema: typeof GeofenceCreatedSchema | typeof GeofenceUpdatedSchema, updatedAt: Date) => {
    const geofence = create(GeofenceSchema, {
      ...row,
      name: row.name!,
      description: undefined,
      createdAt: timestampFromDate(row.createdAt),
      updatedAt: timestampFromDate(updatedAt),
    });
    const eventId = randomUUID();
    const event = create(schema, { eventId, occurredAt: timestampFromDate(updatedAt), geofence });
    await mesh.bus!.publish(subject, toBinary(schema, event), { id: eventId });
  };
  await publish("tracking.v1.geofence.created", GeofenceCreatedSchema, createdAt);

  // The subscription applies it asynchronously: keep reporting fixes inside until one enters.
  let seconds = 0;
  await until(async () => {
    await fix(device.id, (seconds += 10), north(p, seconds % 100));
    return (await kinds(device.id)).length > 0;
  }, "the Enter once the bus delivered the fence");
  t.deepEqual(await kinds(device.id, row.id), ["Enter"]);

  // The other instance moves it 50 km north: the device, still where it was, has left it.
  const movedAt = new Date(createdAt.getTime() + 1000);
  row.centerLatitude = p.lat + 0.45;
  await mesh.db!.em().nativeUpdate(GeofenceEntity, { id: row.id }, { centerLatitude: row.centerLatitude, updatedAt: movedAt });
  await fix(device.id, (seconds += 10), north(p, 0));
  t.deepEqual(await kinds(device.id, row.id), ["Enter", "Exit"], "the stored shape decides, not the index's copy");

  await publish("tracking.v1.geofence.updated", GeofenceUpdatedSchema, movedAt);
  await until(async () => {
    await fix(device.id, (seconds += 10), { latitude: row.centerLatitude, longitude: p.lon + (seconds % 7) / 10_000 });
    return (await kinds(device.id, row.id)).length > 2;
  }, "an Enter at the fence's new place, once the index moved it");
  t.deepEqual(await kinds(device.id, row.id), ["Enter", "Exit", "Enter"]);
});
