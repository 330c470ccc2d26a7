// GET /api/observations/history through the running tracking front, with plain fetch: the JSON
// page, filters, paging, and the csv, geojson and gpx files parsed back by real parsers.
// Devices and observations are created through POST /api/devices and POST /api/observations.
import test from "ava";
import { parse } from "csv-parse/sync";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { randomUUID } from "node:crypto";
import { historyPoints } from "../../services/tracking/store/history-queries.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

// Low enough that one test can overflow it; every other export here stays under it.
const EXPORT_MAX_ROWS = 6;

let mesh: TestMesh;
let base: string;

test.before(async () => {
  mesh = await startTestMesh({ flags: [`--Tracking:ExportMaxRows=${EXPORT_MAX_ROWS}`] });
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
interface Page {
  items: Json[];
  totalCount: number;
  page: number;
  pageSize: number;
}

const ident = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function post(path: string, body: unknown): Promise<Json> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Json;
  if (res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

const createAsset = async () => String((await post("/api/assets", { name: ident("asset") })).id);
const createDevice = async (assetId: string | null, identifier: string | null = ident("tracker")) =>
  String((await post("/api/devices", { identifier, assetId })).id);

interface ObservationSpec {
  at: Date;
  latitude?: number;
  longitude?: number;
  altitude?: number | null;
  speedKmh?: number | null;
}

/** Records observations through POST /api/observations, in the order given; answers their ids. */
async function record(deviceId: string, specs: ObservationSpec[]): Promise<string[]> {
  const ids: string[] = [];
  for (const s of specs) {
    const observation = await post("/api/observations", {
      deviceId,
      observedAt: s.at.toISOString(),
      latitude: s.latitude ?? 51.5,
      longitude: s.longitude ?? -0.12,
      altitude: s.altitude ?? null,
      accuracyMeters: 5,
      speedKmh: s.speedKmh === undefined ? 42 : s.speedKmh,
      headingDegrees: 90,
    });
    ids.push(String(observation.id));
  }
  return ids;
}

/** `n` minutes after a fixed, per-test base time, so tests never see each other's rows by time. */
function clock() {
  // Somewhere in the two years before 2026: always in the past, as recording requires.
  const start = Date.UTC(2024, 0, 1) + Math.floor(Math.random() * 1e6) * 60_000;
  return (minutes: number) => new Date(start + minutes * 60_000);
}

async function history(query: string) {
  const res = await fetch(`${base}/api/observations/history${query}`);
  const text = await res.text();
  return { res, status: res.status, text, type: res.headers.get("content-type") ?? "" };
}

async function page(query: string): Promise<Page> {
  const { status, text } = await history(query);
  if (status !== 200) throw new Error(`history answered ${status}: ${text}`);
  return JSON.parse(text) as Page;
}

async function problem(query: string) {
  const r = await history(query);
  return { ...r, body: JSON.parse(r.text) as Problem };
}

test("json: a page of the device's observations, newest first, with the documented defaults", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const deviceId = await createDevice(assetId);
  const ids = await record(deviceId, [{ at: at(1), altitude: 12 }, { at: at(3), speedKmh: null }, { at: at(2) }]);
  const { status, type, text } = await history(`?deviceId=${deviceId}`);
  t.is(status, 200);
  t.regex(type, /^application\/json/);
  const body = JSON.parse(text) as Page & Json;
  t.deepEqual(Object.keys(body).sort(), ["items", "page", "pageSize", "totalCount"], "no export property in JSON");
  t.is(body.totalCount, 3);
  t.is(body.page, 1);
  t.is(body.pageSize, 50);
  t.deepEqual(
    body.items.map((i) => i.id),
    [ids[1], ids[2], ids[0]],
  );
  t.like(body.items[2], { deviceId, latitude: 51.5, longitude: -0.12, altitude: 12, accuracyMeters: 5, speedKmh: 42, source: "api" });
  t.is(body.items[0]!.speedKmh, null, "unset optional values are null");
  t.is(body.items[0]!.observedAt, at(3).toISOString().replace(".000Z", "Z"));
  t.is((await page(`?deviceId=${deviceId}&format=json`)).items.length, 3, "format=json is the default");
});

test("json: page and pageSize walk the history without overlap; past the end is an empty page", async (t) => {
  const at = clock();
  const deviceId = await createDevice(null);
  const ids = await record(
    deviceId,
    [0, 1, 2, 3, 4].map((m) => ({ at: at(m) })),
  );
  const seen: string[] = [];
  for (let p = 1; p <= 3; p++) {
    const body = await page(`?deviceId=${deviceId}&page=${p}&pageSize=2`);
    t.is(body.page, p);
    t.is(body.pageSize, 2);
    t.is(body.totalCount, 5);
    seen.push(...body.items.map((i) => String(i.id)));
  }
  t.deepEqual(seen, [...ids].reverse());
  const beyond = await page(`?deviceId=${deviceId}&page=9&pageSize=2`);
  t.deepEqual(beyond.items, []);
  t.is(beyond.totalCount, 5);
  t.is((await page(`?deviceId=${deviceId}&pageSize=200`)).pageSize, 200, "200 is the largest page");
});

test("json: equal timestamps are ordered by id, so paging is stable", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  // One observation per device and instant is the rule, so equal times need several devices.
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const deviceId = await createDevice(assetId);
    ids.push(...(await record(deviceId, [{ at: at(7) }])));
  }
  const expected = [...ids].sort().reverse();
  const all = await page(`?assetId=${assetId}`);
  t.deepEqual(
    all.items.map((i) => i.id),
    expected,
    "id descending breaks the tie",
  );
  const paged: unknown[] = [];
  for (let p = 1; p <= 4; p++) paged.push(...(await page(`?assetId=${assetId}&page=${p}&pageSize=1`)).items.map((i) => i.id));
  t.deepEqual(paged, expected);
});

test("filters: deviceId, assetId, from and to (inclusive) combine", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const d1 = await createDevice(assetId);
  const d2 = await createDevice(assetId);
  const [a1, a2, a3] = await record(d1, [{ at: at(1) }, { at: at(2) }, { at: at(3) }]);
  const [b1] = await record(d2, [{ at: at(2) }]);
  const ids = async (q: string) => (await page(q)).items.map((i) => i.id).sort();
  t.deepEqual(await ids(`?assetId=${assetId}`), [a1, a2, a3, b1].sort());
  t.deepEqual(await ids(`?deviceId=${d2}`), [b1]);
  t.deepEqual(await ids(`?assetId=${assetId}&deviceId=${d1}`), [a1, a2, a3].sort());
  const from = encodeURIComponent(at(2).toISOString());
  const to = encodeURIComponent(at(2).toISOString());
  t.deepEqual(await ids(`?assetId=${assetId}&from=${from}`), [a2, a3, b1].sort());
  t.deepEqual(await ids(`?assetId=${assetId}&to=${to}`), [a1, a2, b1].sort());
  t.deepEqual(await ids(`?assetId=${assetId}&from=${from}&to=${to}`), [a2, b1].sort(), "from = to selects that instant");
  t.deepEqual(await ids(`?deviceId=${d1}&assetId=${await createAsset()}`), [], "filters are and-ed");
  t.deepEqual(await ids(`?deviceId=${randomUUID()}`), [], "an unknown device has no history, not a 404");
});

const badRequests: [name: string, query: string, field: string, message?: RegExp][] = [
  ["a malformed deviceId", "?deviceId=not-a-uuid", "deviceId", /not a valid uuid/],
  ["a malformed assetId", "?assetId=123", "assetId", /not a valid uuid/],
  ["from after to", "?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z", "from", /later than to/],
  ["page 0", "?page=0", "page", /1 or more/],
  ["pageSize 0", "?pageSize=0", "pageSize", /1 to 200/],
  ["pageSize 201", "?pageSize=201", "pageSize", /1 to 200/],
  ["pageSize 201 on a file export too", "?pageSize=201&format=csv", "pageSize", /1 to 200/],
  ["an unknown format", "?format=kml", "format", /^must be one of json, csv, geojson, gpx$/],
  ["a non-numeric page", "?page=two", "page"],
  ["a malformed from", "?from=yesterday", "from"],
];

for (const [name, query, field, message] of badRequests) {
  test(`400 for ${name}, naming ${field}`, async (t) => {
    const { status, type, body } = await problem(query);
    t.is(status, 400);
    t.regex(type, /^application\/problem\+json/);
    t.is(body.status, 400);
    t.truthy(body.errors?.[field], JSON.stringify(body));
    if (message) t.regex(body.errors![field]![0]!, message);
  });
}

test("400 names every bad parameter at once", async (t) => {
  const { status, body } = await problem("?deviceId=x&assetId=y&format=xml");
  t.is(status, 400);
  t.deepEqual(Object.keys(body.errors ?? {}).sort(), ["assetId", "deviceId", "format"]);
});

const FILE_NAME = /^attachment; filename="observations-\d{8}-\d{6}\.(csv|geojson|gpx)"$/;

test("csv: the reference's columns plus AccuracyMeters, every row oldest first, as a download", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const deviceId = await createDevice(assetId);
  const ids = await record(deviceId, [
    { at: at(2), latitude: 51.52, longitude: -0.11, altitude: 30, speedKmh: 55.5 },
    { at: at(1), latitude: 51.51, longitude: -0.1, speedKmh: null },
    { at: at(3) },
  ]);
  const { status, res, type, text } = await history(`?deviceId=${deviceId}&format=CSV&pageSize=1`);
  t.is(status, 200);
  t.is(type, "text/csv; charset=utf-8");
  t.regex(res.headers.get("content-disposition") ?? "", FILE_NAME);
  t.regex(res.headers.get("content-disposition") ?? "", /\.csv"$/);
  t.is(res.headers.get("x-export-truncated"), null, "not capped, not flagged");
  const rows = parse(text, { columns: true }) as Record<string, string>[];
  t.deepEqual(Object.keys(rows[0]!), [
    "ObservationId",
    "DeviceId",
    "AssetId",
    "ObservedAt",
    "Latitude",
    "Longitude",
    "Altitude",
    "SpeedKmh",
    "Heading",
    "AccuracyMeters",
  ]);
  t.is(rows.length, 3, "files ignore paging");
  t.deepEqual(
    rows.map((r) => r.ObservationId),
    [ids[1], ids[0], ids[2]],
    "oldest first",
  );
  t.deepEqual(rows[1], {
    ObservationId: ids[0]!,
    DeviceId: deviceId,
    AssetId: assetId,
    ObservedAt: at(2).toISOString(),
    Latitude: "51.52",
    Longitude: "-0.11",
    Altitude: "30",
    SpeedKmh: "55.5",
    Heading: "90",
    AccuracyMeters: "5",
  });
  t.is(rows[0]!.SpeedKmh, "", "null is an empty field");
  t.is(rows[0]!.Altitude, "");
});

test("csv: no match is a header-only file", async (t) => {
  const { status, text } = await history(`?deviceId=${randomUUID()}&format=csv`);
  t.is(status, 200);
  t.deepEqual(parse(text), [
    ["ObservationId", "DeviceId", "AssetId", "ObservedAt", "Latitude", "Longitude", "Altitude", "SpeedKmh", "Heading", "AccuracyMeters"],
  ]);
});

interface Feature {
  type: string;
  geometry: { type: string; coordinates: number[] & number[][] };
  properties: Json;
}

test("geojson: a FeatureCollection of [lon, lat] points and one LineString per device in time order", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const d1 = await createDevice(assetId, ident("van"));
  const d2 = await createDevice(assetId);
  const d1Ids = await record(d1, [
    { at: at(2), latitude: 51.52, longitude: -0.12, altitude: 10 },
    { at: at(1), latitude: 51.51, longitude: -0.11 },
  ]);
  await record(d2, [
    { at: at(1), latitude: 48.85, longitude: 2.35 },
    { at: at(3), latitude: 48.86, longitude: 2.36 },
  ]);
  const single = await createDevice(assetId);
  await record(single, [{ at: at(4), latitude: 40.4, longitude: -3.7 }]);

  const { status, res, type, text } = await history(`?assetId=${assetId}&format=geojson`);
  t.is(status, 200);
  t.is(type, "application/geo+json");
  t.regex(res.headers.get("content-disposition") ?? "", /filename="observations-\d{8}-\d{6}\.geojson"$/);
  const doc = JSON.parse(text) as { type: string; features: Feature[] };
  t.is(doc.type, "FeatureCollection");
  const points = doc.features.filter((f) => f.geometry.type === "Point");
  const lines = doc.features.filter((f) => f.geometry.type === "LineString");
  t.is(points.length, 5);
  const first = points.find((p) => p.properties.observationId === d1Ids[1])!;
  t.deepEqual(first.geometry.coordinates, [-0.11, 51.51], "longitude first");
  t.like(first.properties, { deviceId: d1, assetId, observedAt: at(1).toISOString(), speedKmh: 42, headingDegrees: 90, accuracyMeters: 5 });
  const withAltitude = points.find((p) => p.properties.observationId === d1Ids[0])!;
  t.deepEqual(withAltitude.geometry.coordinates, [-0.12, 51.52, 10]);
  t.is(lines.length, 2, "one line per device with two or more points");
  const line1 = lines.find((l) => l.properties.deviceId === d1)!;
  t.deepEqual(line1.geometry.coordinates, [
    [-0.11, 51.51],
    [-0.12, 51.52],
  ]);
  const line2 = lines.find((l) => l.properties.deviceId === d2)!;
  t.deepEqual(line2.geometry.coordinates, [
    [2.35, 48.85],
    [2.36, 48.86],
  ]);
  t.is(line2.properties.pointCount, 2);
});

test("gpx: GPX 1.1 with one trk per device named by its identifier (escaped) or id, points in time order", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const name = `Van <"A"> & 'B', ${randomUUID().slice(0, 4)}`;
  const d1 = await createDevice(assetId, name);
  const d2 = await createDevice(assetId, null);
  await record(d1, [
    { at: at(3), latitude: 51.53, longitude: -0.13 },
    { at: at(1), latitude: 51.51, longitude: -0.11, altitude: 25.5 },
    { at: at(2), latitude: 51.52, longitude: -0.12 },
  ]);
  await record(d2, [{ at: at(2), latitude: 48.85, longitude: 2.35 }]);
  const { status, res, type, text } = await history(`?assetId=${assetId}&format=gpx`);
  t.is(status, 200);
  t.is(type, "application/gpx+xml");
  t.regex(res.headers.get("content-disposition") ?? "", /filename="observations-\d{8}-\d{6}\.gpx"$/);
  t.true(XMLValidator.validate(text) === true, "well-formed XML");
  const doc = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: "@",
    isArray: (tag) => tag === "trk" || tag === "trkpt",
  }).parse(text) as { gpx: Json & { trk: { name: string; trkseg: { trkpt: Json[] } }[] } };
  t.is(doc.gpx["@xmlns"], "http://www.topografix.com/GPX/1/1");
  t.is(doc.gpx["@version"], "1.1");
  t.is(doc.gpx.trk.length, 2);
  t.deepEqual(doc.gpx.trk.map((k) => String(k.name)).sort(), [d2, name].sort());
  const track = doc.gpx.trk.find((k) => k.name === name)!;
  const pts = track.trkseg.trkpt;
  t.deepEqual(
    pts.map((p) => [p["@lat"], p["@lon"]]),
    [
      ["51.51", "-0.11"],
      ["51.52", "-0.12"],
      ["51.53", "-0.13"],
    ],
  );
  t.deepEqual(
    pts.map((p) => p.time),
    [at(1), at(2), at(3)].map((d) => d.toISOString()),
  );
  t.is(pts[0]!.ele, 25.5);
  t.false("ele" in pts[1]!);
});

test("a capped export says so: X-Export-Truncated and X-Export-Total-Count, the oldest rows kept", async (t) => {
  const at = clock();
  const deviceId = await createDevice(null);
  const total = EXPORT_MAX_ROWS + 2;
  const ids = await record(
    deviceId,
    Array.from({ length: total }, (_, m) => ({ at: at(m) })),
  );
  for (const format of ["csv", "geojson", "gpx"]) {
    const { status, res } = await history(`?deviceId=${deviceId}&format=${format}`);
    t.is(status, 200, format);
    t.is(res.headers.get("x-export-truncated"), "true", format);
    t.is(res.headers.get("x-export-total-count"), String(total), format);
  }
  const csv = parse((await history(`?deviceId=${deviceId}&format=csv`)).text, { columns: true }) as Record<string, string>[];
  t.deepEqual(
    csv.map((r) => r.ObservationId),
    ids.slice(0, EXPORT_MAX_ROWS),
  );
  // The JSON page is not an export: the cap does not apply to it.
  const json = await page(`?deviceId=${deviceId}`);
  t.is(json.items.length, total);
  const exact = await createDevice(null);
  await record(
    exact,
    Array.from({ length: EXPORT_MAX_ROWS }, (_, m) => ({ at: at(m) })),
  );
  const full = await history(`?deviceId=${exact}&format=csv`);
  t.is(full.res.headers.get("x-export-truncated"), null, "exactly the cap is not truncated");
});

test("export rows are read in keyset batches: none lost or repeated across batch edges, ties by id", async (t) => {
  const at = clock();
  const assetId = await createAsset();
  const expected: { at: number; id: string }[] = [];
  for (let d = 0; d < 3; d++) {
    const deviceId = await createDevice(assetId);
    // Devices share instants, so batch edges fall between rows with equal timestamps.
    const ids = await record(
      deviceId,
      [0, 1, 2].map((m) => ({ at: at(m) })),
    );
    ids.forEach((id, m) => expected.push({ at: at(m).getTime(), id }));
  }
  expected.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
  for (const batch of [1, 2, 4, 9, 50]) {
    const seen: string[] = [];
    for await (const p of historyPoints(mesh.db!.em(), { assetId }, 100, batch)) seen.push(p.observationId);
    t.deepEqual(
      seen,
      expected.map((e) => e.id),
      `batch ${batch}`,
    );
  }
  const capped: string[] = [];
  for await (const p of historyPoints(mesh.db!.em(), { assetId }, 5, 2)) capped.push(p.observationId);
  t.deepEqual(
    capped,
    expected.slice(0, 5).map((e) => e.id),
  );
});
