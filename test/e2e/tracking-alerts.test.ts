// Geofence breaches and speed alerts through the running tracking front: filters, limit and
// paging, CSV export, acknowledgement one at a time and in bulk, and their events. The rows are
// written straight to the store, so these tests do not depend on the observation engine; every
// test makes its own device and filters by it, so tests stay independent.
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test, { type ExecutionContext } from "ava";
import { parse } from "csv-parse/sync";
import { randomUUID } from "node:crypto";
import { GeofenceBreachService } from "../../gen/tracking/v1/breach_pb.js";
import { GeofenceBreachAcknowledgedSchema, SpeedAlertAcknowledgedSchema } from "../../gen/tracking/v1/events_pb.js";
import { SpeedAlertService } from "../../gen/tracking/v1/speed_alert_pb.js";
import { BreachEntity, SpeedAlertEntity } from "../../services/tracking/store/alert-entities.js";
import { GeofenceEntity } from "../../services/tracking/store/geofence-entity.js";
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
interface Page {
  items: Json[];
  totalCount: number;
  page: number;
  pageSize: number;
}
interface Problem {
  status: number;
  errors?: Record<string, string[]>;
}

const unknownId = "00000000-0000-4000-8000-000000000000";

const call = (method: string, path: string, body?: unknown) => sendJson<Json & Problem & Page>(`${base}${path}`, method, body);

async function createDevice(identifier = `dev-${randomUUID().slice(0, 8)}`): Promise<{ id: string; identifier: string }> {
  const res = await call("POST", "/api/devices", { identifier });
  if (res.status !== 200) throw new Error(`device create answered ${res.status}`);
  return { id: String(res.body.id), identifier };
}

async function createAsset(): Promise<string> {
  const res = await call("POST", "/api/assets", { name: "asset" });
  return String(res.body.id);
}

async function insertGeofence(name: string | null): Promise<string> {
  const id = randomUUID();
  const now = new Date();
  await mesh.db!.em().insert(GeofenceEntity, {
    id,
    name,
    description: null,
    centerLatitude: 51.51,
    centerLongitude: -0.1,
    radiusMeters: 1000,
    isActive: true,
    isSeeded: false,
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

interface RowSpec {
  deviceId: string;
  occurredAt?: Date;
  acknowledged?: boolean;
  assetId?: string | null;
  geofenceId?: string;
  id?: string;
}

function common(spec: RowSpec) {
  const acknowledged = spec.acknowledged ?? false;
  return {
    id: spec.id ?? randomUUID(),
    deviceId: spec.deviceId,
    assetId: spec.assetId ?? null,
    observationId: randomUUID(),
    latitude: 51.5,
    longitude: -0.12,
    occurredAt: spec.occurredAt ?? new Date(),
    acknowledged,
    acknowledgedBy: acknowledged ? "earlier" : null,
    acknowledgedAt: acknowledged ? new Date(Date.now() - 60_000) : null,
    createdAt: new Date(),
  };
}

/** What differs between the two kinds of alert; every shared behaviour is tested for both. */
interface Kind {
  name: string;
  path: string;
  filename: string;
  subject: string;
  insert(specs: RowSpec[]): Promise<string[]>;
  /** The acknowledged alert carried by an acknowledged event. */
  decodeAcknowledged(data: Uint8Array): Json | undefined;
}

const kinds: Kind[] = [
  {
    name: "breaches",
    path: "/api/geofences/breaches",
    filename: "geofence-breaches.csv",
    subject: "tracking.v1.breach.acknowledged",
    async insert(specs) {
      const rows = specs.map((s) => ({ ...common(s), geofenceId: s.geofenceId ?? randomUUID(), breachEventType: "Enter" }));
      await mesh.db!.em().insertMany(BreachEntity, rows);
      return rows.map((r) => r.id);
    },
    decodeAcknowledged: (data) => fromBinary(GeofenceBreachAcknowledgedSchema, data).breach as unknown as Json | undefined,
  },
  {
    name: "speed alerts",
    path: "/api/speed-alerts",
    filename: "speed-alerts.csv",
    subject: "tracking.v1.speed_alert.acknowledged",
    async insert(specs) {
      const rows = specs.map((s) => ({ ...common(s), speedKmh: 150, thresholdKmh: 120 }));
      await mesh.db!.em().insertMany(SpeedAlertEntity, rows);
      return rows.map((r) => r.id);
    },
    decodeAcknowledged: (data) => fromBinary(SpeedAlertAcknowledgedSchema, data).speedAlert as unknown as Json | undefined,
  },
];

/** `count` rows one second apart, the newest first in the answer; returns their ids newest first. */
async function insertSeries(kind: Kind, deviceId: string, count: number, extra: Partial<RowSpec> = {}): Promise<string[]> {
  const start = Date.now() - count * 1000;
  const ids = await kind.insert(Array.from({ length: count }, (_, i) => ({ deviceId, occurredAt: new Date(start + i * 1000), ...extra })));
  return ids.reverse();
}

async function list(kind: Kind, query: Record<string, string | number | boolean>) {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  return call("GET", `${kind.path}?${qs}`);
}

const ids = (page: Page) => page.items.map((i) => String(i.id));

function errorKeys(t: ExecutionContext, res: { status: number; body: Problem }, status = 400) {
  t.is(res.status, status);
  return Object.keys(res.body.errors ?? {});
}

for (const kind of kinds) {
  test(`${kind.name}: newest first with id as tie-break, names and every property, default paging`, async (t) => {
    const device = await createDevice();
    const geofenceId = await insertGeofence("City centre");
    // Times from one reading of the clock: a slow machine must not reorder them.
    const now = Date.now();
    const same = new Date(now - 5000);
    const [a, b] = [randomUUID(), randomUUID()].sort();
    await kind.insert([
      { deviceId: device.id, occurredAt: new Date(now - 9000), geofenceId },
      { deviceId: device.id, occurredAt: same, id: a, geofenceId },
      { deviceId: device.id, occurredAt: same, id: b, geofenceId },
    ]);
    const res = await list(kind, { deviceId: device.id });
    t.is(res.status, 200);
    t.like(res.body, { totalCount: 3, page: 1, pageSize: 50 });
    t.deepEqual(ids(res.body).slice(0, 2), [b, a], "same occurredAt: the greater id first");
    const item = res.body.items[0]!;
    t.like(item, {
      deviceId: device.id,
      deviceIdentifier: device.identifier,
      acknowledged: false,
      acknowledgedBy: null,
      acknowledgedAt: null,
      latitude: 51.5,
      longitude: -0.12,
      assetId: null,
    });
    t.truthy(Date.parse(String(item.occurredAt)));
    if (kind.name === "breaches") t.like(item, { geofenceId, geofenceName: "City centre", breachEventType: "Enter" });
    else t.like(item, { speedKmh: 150, thresholdKmh: 120 });
  });

  test(`${kind.name}: unacknowledged true, false and absent`, async (t) => {
    const device = await createDevice();
    const now = Date.now();
    const [open] = await kind.insert([{ deviceId: device.id, occurredAt: new Date(now) }]);
    const [done] = await kind.insert([{ deviceId: device.id, acknowledged: true, occurredAt: new Date(now - 1000) }]);
    t.deepEqual(ids((await list(kind, { deviceId: device.id, unacknowledged: true })).body), [open]);
    t.deepEqual(ids((await list(kind, { deviceId: device.id, unacknowledged: false })).body), [done]);
    t.deepEqual(ids((await list(kind, { deviceId: device.id })).body), [open, done]);
  });

  test(`${kind.name}: since is inclusive, assetId and deviceId filter`, async (t) => {
    const device = await createDevice();
    const other = await createDevice();
    const assetId = await createAsset();
    const edge = new Date(Date.now() - 30_000);
    const [old] = await kind.insert([{ deviceId: device.id, occurredAt: new Date(edge.getTime() - 1) }]);
    const [atEdge] = await kind.insert([{ deviceId: device.id, occurredAt: edge, assetId }]);
    const [recent] = await kind.insert([{ deviceId: device.id, occurredAt: new Date(edge.getTime() + 1000), assetId }]);
    const [foreign] = await kind.insert([{ deviceId: other.id, assetId }]);

    t.deepEqual(ids((await list(kind, { deviceId: device.id, since: edge.toISOString() })).body), [recent, atEdge]);
    t.deepEqual(ids((await list(kind, { deviceId: device.id })).body), [recent, atEdge, old]);
    t.deepEqual(ids((await list(kind, { assetId })).body), [foreign, recent, atEdge]);
    t.deepEqual(
      ids((await list(kind, { assetId, deviceId: device.id.toUpperCase() })).body),
      [recent, atEdge],
      "filters combine; uuids in any case",
    );
  });

  test(`${kind.name}: limit (default 100) caps the total and paging runs within it`, async (t) => {
    const device = await createDevice();
    const all = await insertSeries(kind, device.id, 120);

    const first = await list(kind, { deviceId: device.id });
    t.like(first.body, { totalCount: 100, page: 1, pageSize: 50 });
    t.deepEqual(ids(first.body), all.slice(0, 50));
    const second = await list(kind, { deviceId: device.id, page: 2 });
    t.deepEqual(ids(second.body), all.slice(50, 100));
    const third = await list(kind, { deviceId: device.id, page: 3 });
    t.is(third.status, 200);
    t.deepEqual(third.body.items, [], "past the limit: an empty page, not the 101st row");
    t.is(third.body.totalCount, 100);

    const limited = await list(kind, { deviceId: device.id, limit: 30, pageSize: 20, page: 2 });
    t.like(limited.body, { totalCount: 30, page: 2, pageSize: 20 });
    t.deepEqual(ids(limited.body), all.slice(20, 30), "the last page is clipped to the limit");

    const wide = await list(kind, { deviceId: device.id, limit: 1000, pageSize: 200 });
    t.is(wide.body.totalCount, 120);
    t.deepEqual(ids(wide.body), all);
  });

  test(`${kind.name}: walking the pages yields every row once, in order, even with equal times`, async (t) => {
    const device = await createDevice();
    const when = new Date(Date.now() - 10_000);
    await kind.insert(Array.from({ length: 23 }, () => ({ deviceId: device.id, occurredAt: when })));
    const full = ids((await list(kind, { deviceId: device.id, pageSize: 200 })).body);
    t.deepEqual(full, [...full].sort().reverse(), "equal times order by id, descending");
    const walked: string[] = [];
    for (let page = 1; page <= 4; page++) walked.push(...ids((await list(kind, { deviceId: device.id, pageSize: 7, page })).body));
    t.deepEqual(walked, full);
  });

  test(`${kind.name}: bad parameters answer 400 naming each one`, async (t) => {
    t.deepEqual(errorKeys(t, await list(kind, { page: 0 })), ["page"]);
    t.deepEqual(errorKeys(t, await list(kind, { pageSize: 0 })), ["pageSize"]);
    t.deepEqual(errorKeys(t, await list(kind, { pageSize: 201 })), ["pageSize"]);
    t.deepEqual(errorKeys(t, await list(kind, { limit: 0 })), ["limit"]);
    t.deepEqual(errorKeys(t, await list(kind, { deviceId: "nope" })), ["deviceId"]);
    t.deepEqual(errorKeys(t, await list(kind, { assetId: "123" })), ["assetId"]);
    const format = await list(kind, { format: "xml" });
    t.deepEqual(errorKeys(t, format), ["format"]);
    t.deepEqual(format.body.errors!.format, ["must be one of json, csv"]);
    t.deepEqual(
      errorKeys(t, await list(kind, { format: "xml", page: 0, deviceId: "x" })).sort(),
      ["deviceId", "format", "page"],
      "all at once",
    );
    t.is((await list(kind, { unacknowledged: "maybe" })).status, 400);
    t.is((await list(kind, { since: "yesterday" })).status, 400);
    t.is((await list(kind, { page: "two" })).status, 400);
    t.is((await list(kind, { colour: "red" })).status, 400, "an unknown query parameter");
    t.is((await list(kind, { format: "JSON" })).status, 200, "format is case-insensitive");
  });

  test(`${kind.name}: acknowledge answers the record, keeps the first acknowledgement, publishes once`, async (t) => {
    const seen: Uint8Array[] = [];
    const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: [kind.subject] }, (m) => {
      seen.push(m.data);
    });
    t.teardown(() => sub.stop());
    const device = await createDevice();
    const [id] = await kind.insert([{ deviceId: device.id }]);

    const first = await call("POST", `${kind.path}/${id}/acknowledge`, { acknowledgedBy: "alice" });
    t.is(first.status, 200);
    t.like(first.body, { id, acknowledged: true, acknowledgedBy: "alice", deviceIdentifier: device.identifier });
    const at = String(first.body.acknowledgedAt);
    t.truthy(Date.parse(at));

    const again = await call("POST", `${kind.path}/${id}/acknowledge`, { acknowledgedBy: "bob" });
    t.is(again.status, 200);
    t.like(again.body, { id, acknowledged: true, acknowledgedBy: "alice", acknowledgedAt: at }, "the first acknowledgement stays");
    const listed = await list(kind, { deviceId: device.id });
    t.like(listed.body.items[0], { acknowledgedBy: "alice", acknowledgedAt: at });

    const anonymous = (await kind.insert([{ deviceId: device.id }]))[0];
    const nobody = await call("POST", `${kind.path}/${anonymous}/acknowledge`, {});
    t.is(nobody.status, 200);
    t.like(nobody.body, { acknowledged: true, acknowledgedBy: null });

    await mesh.drainOutbox();
    const mine = () => seen.map((d) => kind.decodeAcknowledged(d)).filter((a) => a?.id === id);
    // The anonymous acknowledgement came after the repeat, and events leave the outbox in order:
    // once it has arrived, an event the repeat wrongly published would have arrived before it.
    await until(() => seen.some((d) => kind.decodeAcknowledged(d)?.id === anonymous), "the acknowledgement made after the repeat");
    t.is(mine().length, 1, "the repeat publishes nothing");
    t.like(mine()[0], { acknowledged: true, acknowledgedBy: "alice" });
  });

  test(`${kind.name}: acknowledge errors: unknown 404, malformed id 400, unknown property 400, missing body 400`, async (t) => {
    t.is((await call("POST", `${kind.path}/${unknownId}/acknowledge`, {})).status, 404);
    t.deepEqual(errorKeys(t, await call("POST", `${kind.path}/not-a-uuid/acknowledge`, {})), ["id"]);
    const device = await createDevice();
    const [id] = await kind.insert([{ deviceId: device.id }]);
    t.is((await call("POST", `${kind.path}/${id}/acknowledge`, { acknowledgedBy: "x", note: "y" })).status, 400);
    t.is((await call("POST", `${kind.path}/${id}/acknowledge`)).status, 400);
    t.deepEqual(errorKeys(t, await call("POST", `${kind.path}/${id}/acknowledge`, { acknowledgedBy: "x".repeat(201) })), [
      "acknowledgedBy",
    ]);
    t.like((await list(kind, { deviceId: device.id })).body.items[0], { id, acknowledged: false }, "nothing changed");
  });

  test(`${kind.name}: bulk acknowledge counts only the rows it changed`, async (t) => {
    const seen: Uint8Array[] = [];
    const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: [kind.subject] }, (m) => {
      seen.push(m.data);
    });
    t.teardown(() => sub.stop());
    const device = await createDevice();
    const [a, b, c] = await insertSeries(kind, device.id, 3);
    const [done] = await kind.insert([{ deviceId: device.id, acknowledged: true, occurredAt: new Date(Date.now() - 60_000) }]);

    const bulk = await call("POST", `${kind.path}/bulk-acknowledge`, {
      ids: [a, b!.toUpperCase(), a, done, unknownId],
      acknowledgedBy: "ops",
    });
    t.is(bulk.status, 200);
    t.deepEqual(bulk.body, { count: 2 }, "duplicates, already acknowledged and unknown ids count nothing");
    const open = await list(kind, { deviceId: device.id, unacknowledged: true });
    t.deepEqual(ids(open.body), [c]);
    const acked = await list(kind, { deviceId: device.id, unacknowledged: false });
    t.like(
      acked.body.items.find((i) => i.id === a),
      { acknowledgedBy: "ops" },
    );
    t.like(
      acked.body.items.find((i) => i.id === done),
      { acknowledgedBy: "earlier" },
      "an earlier acknowledgement stays",
    );

    t.deepEqual((await call("POST", `${kind.path}/bulk-acknowledge`, { ids: [a, b], acknowledgedBy: "again" })).body, { count: 0 });
    t.deepEqual((await call("POST", `${kind.path}/bulk-acknowledge`, { ids: null, acknowledgedBy: "x" })).body, { count: 0 });
    t.deepEqual((await call("POST", `${kind.path}/bulk-acknowledge`, { ids: [] })).body, { count: 0 });
    t.deepEqual((await call("POST", `${kind.path}/bulk-acknowledge`, {})).body, { count: 0 });

    const bad = await call("POST", `${kind.path}/bulk-acknowledge`, { ids: [c, "nope"], acknowledgedBy: "x" });
    t.deepEqual(errorKeys(t, bad), ["ids[1]"]);
    t.is((await call("POST", `${kind.path}/bulk-acknowledge`, { ids: [c], extra: 1 })).status, 400, "unknown property");
    t.is((await call("POST", `${kind.path}/bulk-acknowledge`, { ids: "all" })).status, 400, "wrong type");
    t.deepEqual(ids((await list(kind, { deviceId: device.id, unacknowledged: true })).body), [c], "refused calls changed nothing");

    // A marker after the repeats: events leave the outbox in order, so once c's acknowledgement has
    // arrived, any event a repeat or a refused call wrongly published has arrived before it.
    t.is((await call("POST", `${kind.path}/${c}/acknowledge`, { acknowledgedBy: "marker" })).status, 200);
    await mesh.drainOutbox();
    const mine = () => seen.map((d) => kind.decodeAcknowledged(d)).filter((x) => x?.id === a || x?.id === b);
    await until(() => seen.some((d) => kind.decodeAcknowledged(d)?.id === c), "the marker acknowledgement of c");
    t.deepEqual(
      mine()
        .map((x) => x!.id)
        .sort(),
      [a, b].sort(),
      "one event per row changed, none for the repeat",
    );
  });

  test(`${kind.name}: racing acknowledgements of one alert: one event, one acknowledgement`, async (t) => {
    const device = await createDevice();
    const [id] = await kind.insert([{ deviceId: device.id }]);
    const answers = await Promise.all(
      ["p", "q", "r", "s"].map((who) => call("POST", `${kind.path}/bulk-acknowledge`, { ids: [id], acknowledgedBy: who })),
    );
    t.deepEqual(answers.map((r) => r.body.count).sort(), [0, 0, 0, 1]);
  });

  test(`${kind.name}: format=csv over REST is an RFC 4180 file with a download name`, async (t) => {
    const device = await createDevice(`tricky,"id"-${randomUUID().slice(0, 6)}`);
    const geofenceId = await insertGeofence("Line one\nline, two");
    const newest = await insertSeries(kind, device.id, 3, { geofenceId });
    await kind.insert([{ deviceId: device.id, acknowledged: true, occurredAt: new Date(Date.now() - 3_600_000), geofenceId }]);

    const res = await list(kind, { deviceId: device.id, unacknowledged: true, format: "csv", pageSize: 1 });
    t.is(res.status, 200);
    t.regex(res.res.headers.get("content-type") ?? "", /^text\/csv/);
    t.is(res.res.headers.get("content-disposition"), `attachment; filename="${kind.filename}"`);
    t.true(res.text.includes("\r\n"), "CRLF line ends");
    const records = parse(res.text, { columns: true }) as Record<string, string>[];
    t.deepEqual(
      records.map((r) => r.Id),
      newest,
      "every selected row, newest first, not one page",
    );
    const first = records[0]!;
    t.like(first, {
      DeviceId: device.id,
      DeviceIdentifier: device.identifier,
      Acknowledged: "false",
      AcknowledgedBy: "",
      Latitude: "51.5",
    });
    t.is(new Date(first.OccurredAt!).toISOString(), first.OccurredAt);
    if (kind.name === "breaches") t.like(first, { GeofenceName: "Line one\nline, two", BreachEventType: "Enter", GeofenceId: geofenceId });
    else t.like(first, { SpeedKmh: "150", ThresholdKmh: "120" });

    const limited = parse((await list(kind, { deviceId: device.id, format: "csv", limit: 2 })).text, { columns: true }) as unknown[];
    t.is(limited.length, 2, "limit caps the file too");
    const empty = await list(kind, { deviceId: randomUUID(), format: "csv" });
    t.is(empty.status, 200);
    t.is(empty.text.split("\r\n")[0], (parse(res.text) as string[][])[0]!.join(","), "an empty export still has its header row");
  });
}

test("csv over gRPC: the export field carries the file and the header names it", async (t) => {
  const device = await createDevice();
  await kinds[0]!.insert([{ deviceId: device.id }]);
  await kinds[1]!.insert([{ deviceId: device.id }, { deviceId: device.id, occurredAt: new Date(Date.now() - 1000) }]);
  const transport = createGrpcTransport({ baseUrl: mesh.serviceUrl });

  let disposition = null as string | null;
  const breaches = await createClient(GeofenceBreachService, transport).listGeofenceBreaches(
    { deviceId: device.id, format: "csv" },
    { onHeader: (h) => (disposition = h.get("content-disposition")) },
  );
  t.is(breaches.export?.contentType, "text/csv; charset=utf-8");
  t.is(disposition, 'attachment; filename="geofence-breaches.csv"');
  t.deepEqual(breaches.items, []);
  t.is(breaches.totalCount, 1);
  const rows = parse(new TextDecoder().decode(breaches.export!.data)) as string[][];
  t.deepEqual(rows[0], [
    "Id",
    "DeviceId",
    "DeviceIdentifier",
    "AssetId",
    "GeofenceId",
    "GeofenceName",
    "BreachEventType",
    "Latitude",
    "Longitude",
    "OccurredAt",
    "Acknowledged",
    "AcknowledgedBy",
    "AcknowledgedAt",
  ]);
  t.is(rows.length, 2);

  const alerts = await createClient(SpeedAlertService, transport).listSpeedAlerts({ deviceId: device.id, format: "csv" });
  const alertRows = parse(new TextDecoder().decode(alerts.export!.data), { columns: true }) as Record<string, string>[];
  t.is(alertRows.length, 2);
  t.is(alerts.totalCount, 2);

  const json = await createClient(SpeedAlertService, transport).listSpeedAlerts({ deviceId: device.id });
  t.is(json.export, undefined, "json answers no file");
  t.is(json.items.length, 2);
});

test("a breach of a deleted geofence keeps its row, with geofenceName null", async (t) => {
  const device = await createDevice();
  const geofenceId = await insertGeofence("temporary");
  const [id] = await kinds[0]!.insert([{ deviceId: device.id, geofenceId }]);
  await mesh.db!.em().nativeDelete(GeofenceEntity, { id: geofenceId });
  const res = await list(kinds[0]!, { deviceId: device.id });
  t.like(res.body.items[0], { id, geofenceId, geofenceName: null });
});

test("end to end: observations raise a breach and a speed alert that list, count in the summary and acknowledge", async (t) => {
  const asset = await call("POST", "/api/assets", { name: "Van", speedThresholdKmh: 80 });
  const assetId = String(asset.body.id);
  const device = (await call("POST", "/api/devices", { identifier: `e2e-${randomUUID().slice(0, 8)}`, assetId })).body;
  const deviceId = String(device.id);
  // A fence of its own far from anything else a test draws, so no other fence is crossed.
  const centre = { latitude: 48.1 + Math.random() / 10, longitude: 11.5 + Math.random() / 10 };
  const fence = await call("POST", "/api/geofences", {
    name: "Depot e2e",
    centerLatitude: centre.latitude,
    centerLongitude: centre.longitude,
    radiusMeters: 300,
    isActive: true,
  });
  t.is(fence.status, 200);

  const start = Date.now() - 120_000;
  const observe = (i: number, dLat: number, speedKmh: number) =>
    call("POST", "/api/observations", {
      deviceId,
      observedAt: new Date(start + i * 30_000).toISOString(),
      latitude: centre.latitude + dLat,
      longitude: centre.longitude,
      speedKmh,
    });
  t.is((await observe(0, 0.05, 40)).status, 200, "outside, under the threshold");
  t.is((await observe(1, 0, 95)).status, 200, "inside, over the threshold");

  const breaches = await list(kinds[0]!, { deviceId });
  t.like(breaches.body, { totalCount: 1 });
  t.like(breaches.body.items[0], {
    breachEventType: "Enter",
    geofenceId: fence.body.id,
    geofenceName: "Depot e2e",
    deviceIdentifier: device.identifier,
    assetId,
  });
  const alerts = await list(kinds[1]!, { deviceId, unacknowledged: true });
  t.like(alerts.body, { totalCount: 1 });
  t.like(alerts.body.items[0], { speedKmh: 95, thresholdKmh: 80, assetId });

  const summary = await call("GET", `/api/devices/${deviceId}/summary`);
  t.like(summary.body, { observationCount: 2, openBreachCount: 1, openSpeedAlertCount: 1 });
  t.like(summary.body.lastPosition, { speedKmh: 95 });

  t.is(
    (await call("POST", `/api/geofences/breaches/${String(breaches.body.items[0]!.id)}/acknowledge`, { acknowledgedBy: "ops" })).status,
    200,
  );
  t.deepEqual((await call("POST", "/api/speed-alerts/bulk-acknowledge", { ids: [alerts.body.items[0]!.id] })).body, { count: 1 });
  t.like((await call("GET", `/api/devices/${deviceId}/summary`)).body, { openBreachCount: 0, openSpeedAlertCount: 0 });
});
