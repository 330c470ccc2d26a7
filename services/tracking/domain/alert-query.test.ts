// The shared breach / speed-alert list rules, without a database: parameters, the page window
// inside the limit, the export cap and the acknowledgement inputs.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import test from "ava";
import type { Checked } from "../../runtime/errors/field-violation.js";
import { ListAlertsRequestSchema } from "../../../gen/tracking/v1/breach_pb.js";
import {
  capExport,
  exportHeaders,
  exportWindow,
  pageWindow,
  resolveAcknowledgedBy,
  resolveAlertQuery,
  resolveBulkIds,
} from "./alert-query.js";

function violatedFields(checked: Checked<unknown>): string[] {
  if (checked.ok) throw new Error("expected violations");
  return checked.violations.map((v) => v.field);
}

function value<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new Error(`unexpected violations: ${JSON.stringify(checked.violations)}`);
  return checked.value;
}

test("defaults: every row, limit 100, page 1 of 50, json", (t) => {
  t.deepEqual(value(resolveAlertQuery(create(ListAlertsRequestSchema))), {
    filter: {},
    limit: 100,
    page: { page: 1, pageSize: 50, offset: 0 },
    format: "json",
  });
});

test("unacknowledged maps to the acknowledged column; ids are lower-cased; since becomes a Date", (t) => {
  const since = new Date("2025-01-02T03:04:05.678Z");
  const open = value(
    resolveAlertQuery({
      unacknowledged: true,
      deviceId: "AAAAAAAA-0000-4000-8000-000000000000",
      since: timestampFromDate(since),
    }),
  );
  t.deepEqual(open.filter, { acknowledged: false, deviceId: "aaaaaaaa-0000-4000-8000-000000000000", since });
  t.deepEqual(value(resolveAlertQuery({ unacknowledged: false })).filter, { acknowledged: true });
  t.is(value(resolveAlertQuery({ format: " CSV " })).format, "csv");
  t.is(value(resolveAlertQuery({ format: "" })).format, "json");
});

test("every bad parameter is named at once, paging ones included", (t) => {
  t.deepEqual(violatedFields(resolveAlertQuery({ deviceId: "x", assetId: "y", limit: 0, format: "xml", page: 0, pageSize: 500 })), [
    "device_id",
    "asset_id",
    "limit",
    "format",
    "page",
    "page_size",
  ]);
  t.deepEqual(violatedFields(resolveAlertQuery({ pageSize: 201 })), ["page_size"]);
});

test("a page is clipped to the limit and empty past it", (t) => {
  const page = (n: number, size: number) => ({ page: n, pageSize: size, offset: (n - 1) * size });
  t.deepEqual(pageWindow(100, page(1, 50)), { offset: 0, take: 50 });
  t.deepEqual(pageWindow(30, page(2, 20)), { offset: 20, take: 10 });
  t.deepEqual(pageWindow(100, page(3, 50)), { offset: 100, take: 0 });
  t.deepEqual(pageWindow(100, page(9, 50)), { offset: 400, take: 0 });
});

test("an export reads one row past the cap only when the limit allows more, and says when it cut", (t) => {
  t.deepEqual(exportWindow(100, 50_000), { take: 100, maxRows: 50_000 });
  t.deepEqual(exportWindow(10, 3), { take: 4, maxRows: 3 });
  t.deepEqual(capExport([1, 2, 3, 4], 3), { rows: [1, 2, 3], truncated: true });
  t.deepEqual(capExport([1, 2, 3], 3), { rows: [1, 2, 3], truncated: false });
  t.deepEqual(exportHeaders("a.csv", false), { "content-disposition": 'attachment; filename="a.csv"' });
  t.is(exportHeaders("a.csv", true)["x-export-truncated"], "true");
});

test("acknowledgement inputs: blank by is null, long by refused, ids deduplicated, bad ids named by index", (t) => {
  t.is(value(resolveAcknowledgedBy(undefined)), null);
  t.is(value(resolveAcknowledgedBy("  ")), null);
  t.is(value(resolveAcknowledgedBy(" ops ")), "ops");
  t.deepEqual(violatedFields(resolveAcknowledgedBy("x".repeat(201))), ["acknowledged_by"]);
  const id = "0f0f0f0f-0000-4000-8000-000000000000";
  t.deepEqual(value(resolveBulkIds([id, id.toUpperCase()])), [id]);
  t.deepEqual(value(resolveBulkIds([])), []);
  t.deepEqual(violatedFields(resolveBulkIds([id, "nope", "", id])), ["ids[1]", "ids[2]"]);
});
