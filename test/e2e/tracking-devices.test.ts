// The documented /api/devices paths through the running tracking front, with plain fetch;
// observation and alert rows for the summary and cascade cases are written straight to the store.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { randomUUID } from "node:crypto";
import { DeviceCreatedSchema, DeviceDeletedSchema, DeviceUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { BreachEntity, SpeedAlertEntity } from "../../services/tracking/store/alert-entities.js";
import { IntegrationFeedEntity } from "../../services/tracking/store/integration-feed-entity.js";
import { ObservationEntity } from "../../services/tracking/store/observation-entity.js";
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
interface Problem {
  status: number;
  title: string;
  detail?: string;
  errors?: Record<string, string[]>;
}

const unknownId = "00000000-0000-4000-8000-000000000000";

const call = (method: string, path: string, body?: unknown) => sendJson<Json & Problem>(`${base}${path}`, method, body);

/** A unique identifier per call, so tests stay independent of each other. */
const ident = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function createAsset(body: Json = { name: "asset" }): Promise<string> {
  const { status, body: asset } = await call("POST", "/api/assets", body);
  if (status !== 200) throw new Error(`asset create answered ${status}`);
  return String(asset.id);
}

async function createDevice(body: Json): Promise<Json> {
  const { status, body: device } = await call("POST", "/api/devices", body);
  if (status !== 200) throw new Error(`device create answered ${status}: ${JSON.stringify(device)}`);
  return device;
}

function insertObservation(deviceId: string, assetId: string | null, observedAt: Date, latitude = 51.5) {
  return mesh.db!.em().insert(ObservationEntity, {
    id: randomUUID(),
    deviceId,
    assetId,
    observedAt,
    latitude,
    longitude: -0.12,
    altitude: null,
    accuracyMeters: 5,
    speedKmh: 42,
    headingDegrees: null,
    metadata: null,
    source: "test",
    receivedAt: new Date(),
  });
}

function alertColumns(deviceId: string, acknowledged: boolean) {
  return {
    id: randomUUID(),
    deviceId,
    assetId: null,
    observationId: randomUUID(),
    latitude: 51.5,
    longitude: -0.12,
    occurredAt: new Date(),
    acknowledged,
    acknowledgedBy: acknowledged ? "ops" : null,
    acknowledgedAt: acknowledged ? new Date() : null,
    createdAt: new Date(),
  };
}

const insertBreach = (deviceId: string, acknowledged: boolean) =>
  mesh.db!.em().insert(BreachEntity, { ...alertColumns(deviceId, acknowledged), geofenceId: randomUUID(), breachEventType: "Enter" });
const insertSpeedAlert = (deviceId: string, acknowledged: boolean) =>
  mesh.db!.em().insert(SpeedAlertEntity, { ...alertColumns(deviceId, acknowledged), speedKmh: 150, thresholdKmh: 120 });

test("POST creates a device and answers 200 with every documented property", async (t) => {
  const assetId = await createAsset();
  const identifier = ident("tracker");
  const { status, res, body } = await call("POST", "/api/devices", {
    identifier,
    label: "Van tracker",
    protocol: "gps-http",
    assetId,
    provider: "acme",
    externalId: "ext-1",
    tags: "van,north",
  });
  t.is(status, 200);
  t.regex(res.headers.get("content-type") ?? "", /^application\/json/);
  t.regex(String(body.id), /^[0-9a-f-]{36}$/);
  t.like(body, {
    identifier,
    label: "Van tracker",
    protocol: "gps-http",
    assetId,
    provider: "acme",
    externalId: "ext-1",
    tags: "van,north",
  });
  t.is(body.integrationFeedId, null, "unset nullable fields are written as null");
  t.is(body.lastSeenAt, null);
  t.truthy(Date.parse(String(body.createdAt)));
  t.is(body.createdAt, body.updatedAt);
});

test("GET one, GET list (a JSON array, newest first), PUT replaces, DELETE answers 200 then 404", async (t) => {
  const first = await createDevice({ identifier: ident("first") });
  const second = await createDevice({ identifier: ident("second"), label: "l", tags: "a" });
  const id = String(second.id);

  const one = await call("GET", `/api/devices/${id}`);
  t.is(one.status, 200);
  t.deepEqual(one.body, second);

  const list = await call("GET", "/api/devices");
  t.is(list.status, 200);
  t.true(Array.isArray(list.body));
  const ids = (list.body as unknown as Json[]).map((d) => d.id);
  t.true(ids.includes(id) && ids.includes(first.id));
  t.true(ids.indexOf(id) < ids.indexOf(first.id), "newest first");

  const put = await call("PUT", `/api/devices/${id}`, { identifier: second.identifier, protocol: "owntracks" });
  t.is(put.status, 200, "keeping its own identifier is no conflict");
  t.is(put.body.protocol, "owntracks");
  t.is(put.body.label, null, "PUT replaces: a property left out becomes null");
  t.is(put.body.tags, null);
  t.is(put.body.createdAt, second.createdAt);
  t.true(Date.parse(String(put.body.updatedAt)) >= Date.parse(String(second.updatedAt)));

  const del = await call("DELETE", `/api/devices/${id}`);
  t.is(del.status, 200);
  t.deepEqual(del.body, { id, deleted: true });
  for (const path of [`/api/devices/${id}`, `/api/devices/${id}/summary`]) t.is((await call("GET", path)).status, 404, path);
  t.is((await call("DELETE", `/api/devices/${id}`)).status, 404, "a second delete finds nothing");
});

test("null is accepted for every nullable property, and an empty body makes a device with no identifier", async (t) => {
  const nulls = {
    identifier: null,
    label: null,
    protocol: null,
    assetId: null,
    provider: null,
    externalId: null,
    tags: null,
    integrationFeedId: null,
  };
  const a = await call("POST", "/api/devices", nulls);
  t.is(a.status, 200);
  t.like(a.body, nulls);
  // Devices without identifier do not collide with each other: the uniqueness is over set values.
  const b = await call("POST", "/api/devices", {});
  t.is(b.status, 200);
  t.is(b.body.identifier, null);
});

test("a duplicate identifier answers 409 naming identifier, on create and on update", async (t) => {
  const identifier = ident("dup");
  await createDevice({ identifier });
  const again = await call("POST", "/api/devices", { identifier, label: "second" });
  t.is(again.status, 409);
  t.is(again.res.headers.get("content-type"), "application/problem+json");
  t.deepEqual(Object.keys(again.body.errors ?? {}), ["identifier"]);

  const other = await createDevice({ identifier: ident("other") });
  const rename = await call("PUT", `/api/devices/${String(other.id)}`, { identifier });
  t.is(rename.status, 409);
  t.deepEqual(Object.keys(rename.body.errors ?? {}), ["identifier"]);
  t.is((await call("GET", `/api/devices/${String(other.id)}`)).body.identifier, other.identifier, "the refused update changed nothing");
});

test("racing creates with one identifier: exactly one wins, the others answer 409", async (t) => {
  const identifier = ident("race");
  const results = await Promise.all(Array.from({ length: 6 }, () => call("POST", "/api/devices", { identifier })));
  const statuses = results.map((r) => r.status).sort();
  t.deepEqual(statuses, [200, 409, 409, 409, 409, 409]);
  const list = (await call("GET", "/api/devices")).body as unknown as Json[];
  t.is(list.filter((d) => d.identifier === identifier).length, 1);
});

test("assetId and integrationFeedId must name existing rows: 404 naming the field; malformed ones 400", async (t) => {
  const missingAsset = await call("POST", "/api/devices", { identifier: ident("x"), assetId: unknownId });
  t.is(missingAsset.status, 404);
  t.deepEqual(Object.keys(missingAsset.body.errors ?? {}), ["assetId"]);

  const missingFeed = await call("POST", "/api/devices", { identifier: ident("x"), integrationFeedId: unknownId });
  t.is(missingFeed.status, 404);
  t.deepEqual(Object.keys(missingFeed.body.errors ?? {}), ["integrationFeedId"]);

  const badAsset = await call("POST", "/api/devices", { assetId: "not-a-uuid" });
  t.is(badAsset.status, 400);
  t.deepEqual(Object.keys(badAsset.body.errors ?? {}), ["assetId"]);

  const badFeed = await call("POST", "/api/devices", { integrationFeedId: "123" });
  t.is(badFeed.status, 400);
  t.deepEqual(Object.keys(badFeed.body.errors ?? {}), ["integrationFeedId"]);

  // A feed that exists is accepted (the feed endpoints arrive later, so the row is made here).
  const feedId = randomUUID();
  await mesh.db!.em().insert(IntegrationFeedEntity, {
    id: feedId,
    name: "feed",
    provider: "traccar",
    isEnabled: true,
    autoCreateDevices: false,
    defaultTags: null,
    configurationJson: null,
    createdAt: new Date(),
    updatedAt: new Date(),
  });
  const device = await createDevice({ identifier: ident("fed"), integrationFeedId: feedId.toUpperCase() });
  t.is(device.integrationFeedId, feedId, "ids are stored lower-case");

  const update = await call("PUT", `/api/devices/${String(device.id)}`, { assetId: unknownId });
  t.is(update.status, 404);
  t.deepEqual(Object.keys(update.body.errors ?? {}), ["assetId"]);
});

test("bad bodies and ids are client errors that change nothing", async (t) => {
  const device = await createDevice({ identifier: ident("stable"), label: "keep" });
  const id = String(device.id);

  const unknown = await call("POST", "/api/devices", { identifier: ident("u"), colour: "red" });
  t.is(unknown.status, 400);
  t.regex(JSON.stringify(unknown.body), /colour/);

  t.is((await call("POST", "/api/devices", { identifier: 5 })).status, 400, "wrong type");
  t.is((await call("POST", "/api/devices")).status, 400, "missing body");
  const noBody = await fetch(`${base}/api/devices`, { method: "POST", headers: { "content-type": "application/json" } });
  t.is(noBody.status, 400, "empty body with a JSON content type");

  const blank = await call("POST", "/api/devices", { identifier: "   " });
  t.is(blank.status, 400);
  t.deepEqual(Object.keys(blank.body.errors ?? {}), ["identifier"]);
  const long = await call("POST", "/api/devices", { identifier: "x".repeat(201), tags: "t".repeat(2001) });
  t.is(long.status, 400);
  t.deepEqual(Object.keys(long.body.errors ?? {}).sort(), ["identifier", "tags"]);

  const badPut = await call("PUT", `/api/devices/${id}`, { label: "changed", extra: true });
  t.is(badPut.status, 400);

  for (const [method, path] of [
    ["GET", "/api/devices/not-a-uuid"],
    ["PUT", "/api/devices/not-a-uuid"],
    ["DELETE", "/api/devices/not-a-uuid"],
    ["GET", "/api/devices/not-a-uuid/summary"],
  ] as const) {
    const res = await call(method, path, method === "PUT" ? {} : undefined);
    t.is(res.status, 400, `${method} ${path}`);
    t.deepEqual(Object.keys(res.body.errors ?? {}), ["id"], `${method} ${path}`);
  }
  for (const [method, path] of [
    ["GET", `/api/devices/${unknownId}`],
    ["PUT", `/api/devices/${unknownId}`],
    ["DELETE", `/api/devices/${unknownId}`],
    ["GET", `/api/devices/${unknownId}/summary`],
  ] as const) {
    t.is((await call(method, path, method === "PUT" ? {} : undefined)).status, 404, `${method} ${path}`);
  }
  t.deepEqual((await call("GET", `/api/devices/${id}`)).body, device);
});

test("summary: the device, its asset, its last position and counts of observations and open alerts", async (t) => {
  const assetId = await createAsset({ name: "Van 9", speedThresholdKmh: 80 });
  const device = await createDevice({ identifier: ident("summary"), assetId });
  const id = String(device.id);

  const empty = await call("GET", `/api/devices/${id}/summary`);
  t.is(empty.status, 200);
  t.deepEqual(empty.body.device, device);
  t.like(empty.body.asset, { id: assetId, name: "Van 9", speedThresholdKmh: 80 });
  t.is(empty.body.lastPosition, null, "no observation yet");
  t.like(empty.body, { observationCount: 0, openBreachCount: 0, openSpeedAlertCount: 0 });

  const now = Date.now();
  await insertObservation(id, assetId, new Date(now - 120_000), 51.1);
  await insertObservation(id, assetId, new Date(now - 60_000), 51.3);
  await insertObservation(id, assetId, new Date(now - 90_000), 51.2);
  await insertBreach(id, false);
  await insertBreach(id, false);
  await insertBreach(id, true);
  await insertSpeedAlert(id, false);
  await insertSpeedAlert(id, true);
  // Another device's rows must not count.
  const other = await createDevice({ identifier: ident("other") });
  await insertObservation(String(other.id), null, new Date(now));
  await insertBreach(String(other.id), false);

  const full = await call("GET", `/api/devices/${id}/summary`);
  t.is(full.status, 200);
  const last = full.body.lastPosition as Json;
  t.is(last.latitude, 51.3, "the newest by observedAt, not by insertion");
  t.is(last.deviceId, id);
  // int64 counts are strings in proto3 JSON.
  t.like(full.body, { observationCount: 3, openBreachCount: 2, openSpeedAlertCount: 1 });

  const bare = await createDevice({ identifier: ident("bare") });
  const bareSummary = await call("GET", `/api/devices/${String(bare.id)}/summary`);
  t.is(bareSummary.status, 200);
  t.is(bareSummary.body.asset, null, "a device without asset has asset null");
});

test("deleting a device takes its observations, breaches and speed alerts with it", async (t) => {
  const device = await createDevice({ identifier: ident("doomed") });
  const id = String(device.id);
  await insertObservation(id, null, new Date(Date.now() - 1000));
  await insertBreach(id, false);
  await insertSpeedAlert(id, true);

  t.is((await call("DELETE", `/api/devices/${id}`)).status, 200);
  const em = mesh.db!.em();
  t.is(await em.count(ObservationEntity, { deviceId: id }), 0);
  t.is(await em.count(BreachEntity, { deviceId: id }), 0);
  t.is(await em.count(SpeedAlertEntity, { deviceId: id }), 0);
});

test("an asset deleted under a device leaves the device with assetId null", async (t) => {
  const assetId = await createAsset();
  const device = await createDevice({ identifier: ident("orphan"), assetId });
  t.is((await call("DELETE", `/api/assets/${assetId}`)).status, 200);
  const after = await call("GET", `/api/devices/${String(device.id)}`);
  t.is(after.status, 200);
  t.is(after.body.assetId, null);
});

test("create, update and delete publish tracking.v1.device.* events, delete with the state before it", async (t) => {
  const seen: { subject: string; data: Uint8Array }[] = [];
  const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.device.>"] }, (m) => {
    seen.push({ subject: m.subject, data: m.data });
  });
  t.teardown(() => sub.stop());

  const identifier = ident("evented");
  const device = await createDevice({ identifier, label: "before" });
  const id = String(device.id);
  await call("PUT", `/api/devices/${id}`, { identifier, label: "after" });
  await call("DELETE", `/api/devices/${id}`);
  await mesh.drainOutbox();

  const schemaOf = (subject: string) =>
    subject.endsWith("created") ? DeviceCreatedSchema : subject.endsWith("updated") ? DeviceUpdatedSchema : DeviceDeletedSchema;
  const mine = () => seen.filter((s) => fromBinary(schemaOf(s.subject), s.data).device?.id === id);
  await until(() => mine().length >= 3, "the device's three events");

  const events = mine();
  t.deepEqual(
    events.map((e) => e.subject),
    ["tracking.v1.device.created", "tracking.v1.device.updated", "tracking.v1.device.deleted"],
  );
  t.is(fromBinary(DeviceCreatedSchema, events[0]!.data).device?.label, "before");
  t.is(fromBinary(DeviceUpdatedSchema, events[1]!.data).device?.label, "after");
  const deleted = fromBinary(DeviceDeletedSchema, events[2]!.data);
  t.is(deleted.device?.identifier, identifier);
  t.is(deleted.device?.label, "after", "the deleted event carries the device as it was");
  t.truthy(deleted.eventId);
});
