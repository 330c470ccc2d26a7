// The history file writers parsed back by real parsers: CSV (csv-parse), GeoJSON (JSON, checked
// against RFC 7946's shapes), GPX (fast-xml-parser); plus format names, file names and filters.
import test from "ava";
import { parse } from "csv-parse/sync";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { attachment, exportFileName, formatViolation, parseExportFormat } from "./export-format.js";
import { createGeoJsonWriter } from "./geojson.js";
import { createGpxWriter, escapeXml, xsdDecimal } from "./gpx.js";
import { checkHistoryRequest, historyFormats } from "./history-query.js";
import { observationCsvHeader, createObservationCsvWriter } from "./observation-csv.js";
import { writeObservationFile } from "./observation-export.js";
import type { TrackPoint } from "../domain/track-point.js";

const A = "aaaaaaaa-0000-4000-8000-000000000001";
const B = "bbbbbbbb-0000-4000-8000-000000000002";
const ASSET = "cccccccc-0000-4000-8000-000000000003";

function point(n: number, deviceId = A, extra: Partial<TrackPoint> = {}): TrackPoint {
  return {
    observationId: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    deviceId,
    deviceIdentifier: deviceId === A ? "van-a" : null,
    assetId: deviceId === A ? ASSET : null,
    observedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, n)),
    latitude: Number((51.5 + n / 1000).toFixed(6)),
    longitude: Number((-0.1 - n / 1000).toFixed(6)),
    altitude: null,
    accuracyMeters: null,
    speedKmh: null,
    headingDegrees: null,
    ...extra,
  };
}

function write(writer: { add(p: TrackPoint): void; finish(): string }, points: TrackPoint[]) {
  for (const p of points) writer.add(p);
  return writer.finish();
}

test("csv: the reference's columns then AccuracyMeters, nulls empty, one row per point in order", (t) => {
  const text = write(createObservationCsvWriter(), [
    point(1, A, { altitude: 12.5, speedKmh: 40, headingDegrees: 90, accuracyMeters: 5 }),
    point(2, B),
  ]);
  const rows = parse(text) as string[][];
  t.deepEqual(rows[0], [...observationCsvHeader]);
  t.deepEqual(rows[0], [
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
  t.deepEqual(rows[1], [point(1).observationId, A, ASSET, "2026-01-02T03:04:01.000Z", "51.501", "-0.101", "12.5", "40", "90", "5"]);
  t.deepEqual(rows[2], [point(2).observationId, B, "", "2026-01-02T03:04:02.000Z", "51.502", "-0.102", "", "", "", ""]);
  t.true(text.includes("\r\n"), "RFC 4180 line ends");
});

test("csv: thousands of rows across write batches keep one header and every row", (t) => {
  const points = Array.from({ length: 2500 }, (_, i) => point(i % 60, A, { observationId: `id-${i}` }));
  const rows = parse(write(createObservationCsvWriter(), points)) as string[][];
  t.is(rows.length, 2501);
  t.is(rows.filter((r) => r[0] === "ObservationId").length, 1);
  t.deepEqual(
    rows.slice(1).map((r) => r[0]),
    points.map((p) => p.observationId),
  );
});

test("csv: an empty export is the header alone", (t) => {
  t.deepEqual(parse(write(createObservationCsvWriter(), [])), [[...observationCsvHeader]]);
});

interface Feature {
  type: string;
  geometry: { type: string; coordinates: number[] | number[][] };
  properties: Record<string, unknown>;
}

test("geojson: a FeatureCollection of [lon, lat] points, then a LineString per device with two or more", (t) => {
  const doc = JSON.parse(
    write(createGeoJsonWriter(), [
      point(1, A, { altitude: 10, speedKmh: 30, headingDegrees: 180, accuracyMeters: 4 }),
      point(2, B),
      point(3, A, { altitude: 11 }),
      point(4, A, { altitude: 12 }),
    ]),
  ) as { type: string; features: Feature[] };
  t.is(doc.type, "FeatureCollection");
  const points = doc.features.filter((f) => f.geometry.type === "Point");
  const lines = doc.features.filter((f) => f.geometry.type === "LineString");
  t.is(points.length, 4);
  t.true(doc.features.every((f) => f.type === "Feature"));
  t.deepEqual(points[0]!.geometry.coordinates, [-0.101, 51.501, 10], "longitude first, altitude third");
  t.deepEqual(points[1]!.geometry.coordinates, [-0.102, 51.502], "no altitude, two elements");
  t.deepEqual(points[0]!.properties, {
    observationId: point(1).observationId,
    deviceId: A,
    assetId: ASSET,
    observedAt: "2026-01-02T03:04:01.000Z",
    speedKmh: 30,
    headingDegrees: 180,
    accuracyMeters: 4,
  });
  t.is(points[1]!.properties.speedKmh, null);
  t.is(lines.length, 1, "device B has one point: no line");
  t.deepEqual(lines[0]!.geometry.coordinates, [
    [-0.101, 51.501, 10],
    [-0.103, 51.503, 11],
    [-0.104, 51.504, 12],
  ]);
  t.like(lines[0]!.properties, { deviceId: A, deviceIdentifier: "van-a", pointCount: 3 });
  t.is(lines[0]!.properties.startedAt, "2026-01-02T03:04:01.000Z");
  t.is(lines[0]!.properties.endedAt, "2026-01-02T03:04:04.000Z");
});

test("geojson: a track with any point lacking altitude is 2D throughout; an empty export is an empty collection", (t) => {
  const doc = JSON.parse(write(createGeoJsonWriter(), [point(1, A, { altitude: 5 }), point(2, A)])) as { features: Feature[] };
  const line = doc.features.find((f) => f.geometry.type === "LineString")!;
  t.deepEqual(line.geometry.coordinates, [
    [-0.101, 51.501],
    [-0.102, 51.502],
  ]);
  t.deepEqual(JSON.parse(write(createGeoJsonWriter(), [])), { type: "FeatureCollection", features: [] });
});

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@", isArray: (name) => ["trk", "trkpt"].includes(name) });

test("gpx: valid GPX 1.1, one trk per device in first-seen order, points in time order with ele and time", (t) => {
  const text = write(createGpxWriter(), [point(1, A, { altitude: 20 }), point(2, B), point(3, A)]);
  t.true(XMLValidator.validate(text) === true);
  const doc = xml.parse(text) as {
    gpx: Record<string, unknown> & { trk: { name: string; trkseg: { trkpt: Record<string, unknown>[] } }[] };
  };
  t.is(doc.gpx["@version"], "1.1");
  t.is(doc.gpx["@xmlns"], "http://www.topografix.com/GPX/1/1");
  t.is(doc.gpx.trk.length, 2);
  t.is(doc.gpx.trk[0]!.name, "van-a");
  t.is(doc.gpx.trk[1]!.name, B, "a device without identifier is named by its id");
  const pts = doc.gpx.trk[0]!.trkseg.trkpt;
  t.deepEqual(
    pts.map((p) => [p["@lat"], p["@lon"]]),
    [
      ["51.501", "-0.101"],
      ["51.503", "-0.103"],
    ],
  );
  t.is(pts[0]!.ele, 20);
  t.is(pts[0]!.time, "2026-01-02T03:04:01.000Z");
  t.false("ele" in pts[1]!, "no altitude, no ele");
  t.regex(text, /<trkpt [^>]*><ele>20<\/ele><time>/, "ele comes before time, as the schema orders them");
});

test("gpx: names with markup, quotes, ampersands and control characters are escaped and parse back", (t) => {
  const name = `Van "A" <1> & Tom's, 2\u0001`;
  const text = write(createGpxWriter(), [point(1, A, { deviceIdentifier: name })]);
  t.true(XMLValidator.validate(text) === true);
  t.false(text.includes("<1>"));
  const doc = new XMLParser({ isArray: (n) => n === "trk" }).parse(text) as { gpx: { trk: { name: string }[] } };
  t.is(doc.gpx.trk[0]!.name, `Van "A" <1> & Tom's, 2\uFFFD`);
  t.is(escapeXml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
});

test("gpx: coordinates are xsd:decimal, never exponent notation", (t) => {
  t.is(xsdDecimal(1e-7), "0.0000001");
  t.is(xsdDecimal(-2.5e-7), "-0.00000025");
  t.is(xsdDecimal(51.5), "51.5");
  t.is(xsdDecimal(0), "0");
  const text = write(createGpxWriter(), [point(1, A, { longitude: 1e-7 })]);
  t.regex(text, /lon="0\.0000001"/);
});

test("writeObservationFile: media type, a dated file name, bytes and count for each format", async (t) => {
  const at = new Date("2026-03-04T05:06:07.890Z");
  const cases = [
    ["csv", "text/csv; charset=utf-8", "observations-20260304-050607.csv"],
    ["geojson", "application/geo+json", "observations-20260304-050607.geojson"],
    ["gpx", "application/gpx+xml", "observations-20260304-050607.gpx"],
  ] as const;
  for (const [format, contentType, fileName] of cases) {
    const file = await writeObservationFile(format, [point(1), point(2)], at);
    t.is(file.contentType, contentType);
    t.is(file.fileName, fileName);
    t.is(file.count, 2);
    t.true(file.data.byteLength > 0);
  }
});

test("format names: json by default, case-insensitive, unknown refused with the allowed values", (t) => {
  t.is(parseExportFormat(undefined, historyFormats), "json");
  t.is(parseExportFormat("", historyFormats), "json");
  t.is(parseExportFormat("CSV", historyFormats), "csv");
  t.is(parseExportFormat("GeoJSON", historyFormats), "geojson");
  t.is(parseExportFormat("xml", historyFormats), undefined);
  t.is(formatViolation(historyFormats), "must be one of json, csv, geojson, gpx");
  t.is(exportFileName("observations", "gpx", new Date("2026-12-31T23:59:58.001Z")), "observations-20261231-235958.gpx");
  t.is(attachment('a"b.csv'), 'attachment; filename="a_b.csv"');
});

test("history request: uuids, from after to and format are each reported, by proto field name", (t) => {
  const ok = checkHistoryRequest({ deviceId: A.toUpperCase(), from: new Date(1), to: new Date(2), format: "gpx" });
  t.deepEqual(ok.violations, []);
  t.is(ok.filter.deviceId, A, "uuids are compared lower-case");
  t.is(ok.format, "gpx");
  t.deepEqual(checkHistoryRequest({ deviceId: "", assetId: "" }).filter, {
    deviceId: undefined,
    assetId: undefined,
    from: undefined,
    to: undefined,
  });
  const bad = checkHistoryRequest({ deviceId: "nope", assetId: "x", from: new Date(2), to: new Date(1), format: "kml" });
  t.deepEqual(
    bad.violations.map((v) => v.field),
    ["device_id", "asset_id", "from", "format"],
  );
  t.is(bad.violations[3]!.description, "must be one of json, csv, geojson, gpx");
  t.deepEqual(checkHistoryRequest({ from: new Date(5), to: new Date(5) }).violations, [], "from equal to to is fine");
});
