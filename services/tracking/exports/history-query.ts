// A history request checked (pure): its filters and its format, or every violation at once. The
// reads it leads to are in store/history-queries.ts.
import { isUuid, truncate, type FieldViolation } from "../../runtime/errors/index.js";
import type { HistoryFilter } from "../store/history-queries.js";
import { formatViolation, parseExportFormat, type ExportFormat } from "./export-format.js";

export const historyFormats = ["json", "csv", "geojson", "gpx"] as const satisfies readonly ExportFormat[];
export type HistoryFormat = (typeof historyFormats)[number];

export interface HistoryRequestLike {
  deviceId?: string;
  assetId?: string;
  from?: Date;
  to?: Date;
  format?: string;
}

/** Filters and format of a history request, or every violation at once (all of them are 400s). */
export function checkHistoryRequest(req: HistoryRequestLike): {
  filter: HistoryFilter;
  format: HistoryFormat;
  violations: FieldViolation[];
} {
  const violations: FieldViolation[] = [];
  const uuid = (field: string, value: string | undefined) => {
    // `?deviceId=` is no filter, as a form that leaves the box empty means.
    if (value === undefined || value === "") return undefined;
    if (isUuid(value)) return value.toLowerCase();
    violations.push({ field, description: `'${truncate(value)}' is not a valid uuid` });
    return undefined;
  };
  const deviceId = uuid("device_id", req.deviceId);
  const assetId = uuid("asset_id", req.assetId);
  if (req.from && req.to && req.from.getTime() > req.to.getTime()) {
    violations.push({ field: "from", description: "must not be later than to" });
  }
  const format = parseExportFormat(req.format, historyFormats);
  if (!format) violations.push({ field: "format", description: formatViolation(historyFormats) });
  return { filter: { deviceId, assetId, from: req.from, to: req.to }, format: format ?? "json", violations };
}
