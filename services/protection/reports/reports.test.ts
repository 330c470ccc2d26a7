// The reports read back by others' code: the CSV parsed with csv-parse, the PDF's text extracted
// with pdf.js; the buckets at day, week and year edges of UTC.
import test from "ava";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { parse } from "csv-parse/sync";
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs";
import {
  floorToBucket,
  protectionReportPdf,
  TimeseriesRangeError,
  timeseriesBuckets,
  timeseriesCsv,
  type TimeseriesPoint,
  utcText,
  zeroFilledSeries,
} from "./index.js";

const d = (text: string) => new Date(text);
const texts = (dates: Date[]) => dates.map(utcText);

// --- buckets ---

test("hours: every hour of [floor(from), to), to itself excluded", (t) => {
  t.deepEqual(texts(timeseriesBuckets(d("2025-03-30T00:30:00Z"), d("2025-03-30T03:00:00Z"), "1h")), [
    "2025-03-30T00:00:00Z",
    "2025-03-30T01:00:00Z",
    "2025-03-30T02:00:00Z",
  ]);
  t.deepEqual(texts(timeseriesBuckets(d("2025-03-30T00:00:00Z"), d("2025-03-30T00:00:00.001Z"), "1h")), ["2025-03-30T00:00:00Z"]);
});

test("days: UTC midnights across a month end, a leap day and a year end", (t) => {
  t.deepEqual(texts(timeseriesBuckets(d("2024-02-28T23:59:59Z"), d("2024-03-01T00:00:01Z"), "1d")), [
    "2024-02-28T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "2024-03-01T00:00:00Z",
  ]);
  t.deepEqual(texts(timeseriesBuckets(d("2024-12-31T12:00:00Z"), d("2025-01-02T00:00:00Z"), "1d")), [
    "2024-12-31T00:00:00Z",
    "2025-01-01T00:00:00Z",
  ]);
});

test("weeks start on Monday 00:00 UTC, also across a year end", (t) => {
  // 2025-01-01 is a Wednesday: its week began on Monday 2024-12-30.
  t.is(utcText(floorToBucket(d("2025-01-01T10:00:00Z"), "1w")), "2024-12-30T00:00:00Z");
  t.is(utcText(floorToBucket(d("2025-01-05T23:59:59.999Z"), "1w")), "2024-12-30T00:00:00Z", "Sunday is the week's last day");
  t.is(utcText(floorToBucket(d("2025-01-06T00:00:00Z"), "1w")), "2025-01-06T00:00:00Z", "Monday starts one");
  t.is(utcText(floorToBucket(d("1970-01-01T00:00:00Z"), "1w")), "1969-12-29T00:00:00Z", "before the first Monday of 1970");
  t.deepEqual(texts(timeseriesBuckets(d("2025-01-01T00:00:00Z"), d("2025-01-13T00:00:00Z"), "1w")), [
    "2024-12-30T00:00:00Z",
    "2025-01-06T00:00:00Z",
  ]);
  t.deepEqual(texts(timeseriesBuckets(d("2025-01-01T00:00:00Z"), d("2025-01-13T00:00:01Z"), "1w")), [
    "2024-12-30T00:00:00Z",
    "2025-01-06T00:00:00Z",
    "2025-01-13T00:00:00Z",
  ]);
  for (const week of timeseriesBuckets(d("2023-01-01T00:00:00Z"), d("2026-01-01T00:00:00Z"), "1w")) t.is(week.getUTCDay(), 1);
});

test("at most 10,000 buckets; from must be before to; the interval must be one of 1h, 1d, 1w", (t) => {
  const from = d("2024-01-01T00:00:00Z");
  t.is(timeseriesBuckets(from, new Date(from.getTime() + 10_000 * 3_600_000), "1h").length, 10_000);
  t.throws(() => timeseriesBuckets(from, new Date(from.getTime() + 10_000 * 3_600_000 + 1), "1h"), {
    instanceOf: TimeseriesRangeError,
    message: /10001 buckets of 1h; at most 10000/,
  });
  t.throws(() => timeseriesBuckets(from, d("2100-01-01T00:00:00Z"), "1d"), { instanceOf: TimeseriesRangeError });
  t.throws(() => timeseriesBuckets(from, from, "1d"), { instanceOf: TimeseriesRangeError, message: /from must be before to/ });
  t.throws(() => timeseriesBuckets(d("2024-01-02T00:00:00Z"), from, "1d"), { instanceOf: TimeseriesRangeError });
  t.throws(() => timeseriesBuckets(from, d("nonsense"), "1d"), { instanceOf: TimeseriesRangeError });
  t.throws(() => timeseriesBuckets(from, d("2024-02-01T00:00:00Z"), "1m" as "1d"), {
    instanceOf: TimeseriesRangeError,
    message: /1h, 1d, 1w/,
  });
});

test("zeroFilledSeries puts the rows on their buckets and zeros elsewhere", (t) => {
  const buckets = timeseriesBuckets(d("2025-01-01T00:00:00Z"), d("2025-01-04T00:00:00Z"), "1d");
  const series = zeroFilledSeries(buckets, [{ bucket: d("2025-01-02T00:00:00Z"), block_count: 7, tamper_alerts: 2 }]);
  t.deepEqual(
    series.map((p) => [utcText(p.timestamp), p.block_count, p.tamper_alerts]),
    [
      ["2025-01-01T00:00:00Z", 0, 0],
      ["2025-01-02T00:00:00Z", 7, 2],
      ["2025-01-03T00:00:00Z", 0, 0],
    ],
  );
});

// --- CSV ---

const series: TimeseriesPoint[] = zeroFilledSeries(timeseriesBuckets(d("2025-01-01T00:00:00Z"), d("2025-01-31T00:00:00Z"), "1d"), [
  { bucket: d("2025-01-03T00:00:00Z"), block_count: 1234, tamper_alerts: 3 },
  { bucket: d("2025-01-10T00:00:00Z"), block_count: 56, tamper_alerts: 0 },
  { bucket: d("2025-01-30T00:00:00Z"), block_count: 999, tamper_alerts: 11 },
]);

test("the CSV is RFC 4180 with the documented header, a row per point, and parses back with csv-parse", (t) => {
  const csv = timeseriesCsv(series);
  t.true(csv.startsWith("timestamp,block_count,tamper_alerts\r\n2025-01-01T00:00:00Z,0,0\r\n"));
  t.true(csv.endsWith("\r\n"));
  t.false(/[^\r]\n/.test(csv), "every line ends with CRLF");
  const rows = parse(csv, { columns: true, record_delimiter: "\r\n" }) as Record<string, string>[];
  t.is(rows.length, 30);
  t.deepEqual(rows[2], { timestamp: "2025-01-03T00:00:00Z", block_count: "1234", tamper_alerts: "3" });
  t.deepEqual(rows[29], { timestamp: "2025-01-30T00:00:00Z", block_count: "999", tamper_alerts: "11" });
  t.is(timeseriesCsv([]), "timestamp,block_count,tamper_alerts\r\n");
});

// --- PDF ---

/** pdf.js's own copies of the standard 14 fonts' metrics, for the built-in Helvetica the report uses. */
const standardFontDataUrl = `${dirname(createRequire(import.meta.url).resolve("pdfjs-dist/package.json"))}/standard_fonts/`;

async function pdfText(pdf: Buffer): Promise<string[]> {
  const doc = await getDocument({ data: new Uint8Array(pdf), standardFontDataUrl, useSystemFonts: false, isEvalSupported: false }).promise;
  const pages: string[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent();
    pages.push(content.items.map((item) => ("str" in item ? item.str : "")).join(" "));
  }
  await doc.destroy();
  return pages;
}

test("the PDF reads back: title, period, totals, chart legend, and every device of the table", async (t) => {
  const devices = Array.from({ length: 60 }, (_, i) => ({
    hostname: `laptop-${String(i).padStart(2, "0")}.home`,
    blocks: 1000 + i,
    tamper_alerts: i % 4,
  }));
  devices.push({ hostname: "Küche-PC", blocks: 1, tamper_alerts: 0 }, { hostname: "手机", blocks: 2, tamper_alerts: 1 });
  const pdf = await protectionReportPdf({
    period: { from: d("2025-01-01T00:00:00Z"), to: d("2025-01-31T00:00:00Z"), interval: "1d" },
    totals: { blocks: 2289, tamper_alerts: 14, devices: devices.length },
    series,
    devices,
  });
  t.is(pdf.subarray(0, 5).toString("latin1"), "%PDF-");
  const pages = await pdfText(pdf);
  t.true(pages.length >= 2, "the device table runs onto a second page");
  const all = pages.join("\n");
  t.true(pages[0]!.includes("Protection report"));
  t.true(all.includes("Period: 2025-01-01T00:00:00Z to 2025-01-31T00:00:00Z (UTC), one bar per day"));
  t.true(all.includes("Blocks: 2,289"));
  t.true(all.includes("Tamper alerts: 14"));
  t.true(all.includes("Devices: 62"));
  t.true(all.includes("max 1,234 blocks per bar"));
  t.true(all.includes("Hostname"));
  for (const device of devices.slice(0, 60)) t.true(all.includes(device.hostname), device.hostname);
  t.true(all.includes("1,059"));
  t.true(all.includes("Küche-PC"));
  t.true(all.includes("??"), "characters the built-in font cannot write are replaced");
});

test("an empty report still reads back", async (t) => {
  const pdf = await protectionReportPdf({
    period: { from: d("2025-01-01T00:00:00Z"), to: d("2025-01-02T00:00:00Z"), interval: "1h" },
    totals: { blocks: 0, tamper_alerts: 0, devices: 0 },
    series: [],
    devices: [],
  });
  const [text] = await pdfText(pdf);
  t.true(text!.includes("Protection report"));
  t.true(text!.includes("one bar per hour"));
  t.true(text!.includes("no devices"));
});
