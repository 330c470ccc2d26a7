// The ListAlertsRequest rules shared by the breach and speed-alert lists: which rows a request
// selects, which of them one page or one export holds, and what format it answers. No I/O here;
// refusals come back as field violations, which the handlers answer as InvalidArgument.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { isUuid, truncate, type Checked, type FieldViolation } from "../../runtime/errors/field-violation.js";
import { checkPage, type PageRequest } from "../../runtime/validation/page-rule.js";

export const alertFormats = ["json", "csv"] as const;
export type AlertFormat = (typeof alertFormats)[number];

/** The reference's default: without a limit a list considers the 100 newest rows. */
export const defaultAlertLimit = 100;

export interface ListAlertsRequestLike {
  unacknowledged?: boolean;
  limit?: number;
  since?: Timestamp;
  deviceId?: string;
  assetId?: string;
  page?: number;
  pageSize?: number;
  format?: string;
}

/** Which rows are selected; every property left out selects all. */
export interface AlertFilter {
  acknowledged?: boolean;
  /** Rows that occurred at or after this instant. */
  since?: Date;
  deviceId?: string;
  assetId?: string;
}

export interface AlertQuery {
  filter: AlertFilter;
  /** At most this many rows (newest first) are considered at all; paging happens within them. */
  limit: number;
  page: PageRequest;
  format: AlertFormat;
}

/** Checks a list request: the query, or every bad parameter named by its proto name. */
export function resolveAlertQuery(req: ListAlertsRequestLike): Checked<AlertQuery> {
  const violations: FieldViolation[] = [];
  const uuid = (field: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    if (isUuid(value)) return value.toLowerCase();
    violations.push({ field, description: `'${truncate(value)}' is not a valid uuid` });
    return undefined;
  };
  const filter: AlertFilter = {};
  // "unacknowledged=false" asks for the acknowledged ones, not for everything.
  if (req.unacknowledged !== undefined) filter.acknowledged = !req.unacknowledged;
  if (req.since) filter.since = timestampDate(req.since);
  const deviceId = uuid("device_id", req.deviceId);
  if (deviceId) filter.deviceId = deviceId;
  const assetId = uuid("asset_id", req.assetId);
  if (assetId) filter.assetId = assetId;

  const limit = req.limit ?? defaultAlertLimit;
  if (limit < 1) violations.push({ field: "limit", description: "must be 1 or more" });

  const format = parseFormat(req.format);
  if (!format) violations.push({ field: "format", description: `must be one of ${alertFormats.join(", ")}` });

  // Paging problems are reported with the others, not one round trip after them.
  const page = checkPage({ page: req.page, pageSize: req.pageSize });
  if (!page.ok) violations.push(...page.violations);
  if (violations.length || !page.ok || !format) return { ok: false, violations };
  return { ok: true, value: { filter, limit, page: page.value, format } };
}

/** Case and surrounding blanks do not matter; absent or empty means json. */
function parseFormat(value: string | undefined): AlertFormat | undefined {
  const normalised = (value ?? "").trim().toLowerCase();
  if (normalised === "") return "json";
  return (alertFormats as readonly string[]).includes(normalised) ? (normalised as AlertFormat) : undefined;
}

/**
 * The slice of the newest-first rows one page answers: the page's window, clipped to the limit.
 * `take` is 0 when the page lies wholly past the limit.
 */
export function pageWindow(limit: number, page: PageRequest): { offset: number; take: number } {
  return { offset: page.offset, take: Math.max(0, Math.min(page.pageSize, limit - page.offset)) };
}

/**
 * How many rows an export reads: everything the limit selects, up to the export cap. One row more
 * than the cap is read when the limit allows it, so a cut-off export can say it was cut off.
 */
export function exportWindow(limit: number, maxRows: number): { take: number; maxRows: number } {
  return { take: limit > maxRows ? maxRows + 1 : limit, maxRows };
}

/** Rows of an export and whether the cap cut some off. */
export function capExport<T>(rows: readonly T[], maxRows: number): { rows: readonly T[]; truncated: boolean } {
  return rows.length > maxRows ? { rows: rows.slice(0, maxRows), truncated: true } : { rows, truncated: false };
}

/** Response headers of an export: a download name, and a flag when the cap cut rows off. */
export function exportHeaders(filename: string, truncated: boolean): Record<string, string> {
  return {
    "content-disposition": `attachment; filename="${filename}"`,
    ...(truncated ? { "x-export-truncated": "true" } : {}),
  };
}

const maxAcknowledgedByLength = 200;

/** Who acknowledged: trimmed, blank as absent, bounded so one field cannot carry a document. */
export function resolveAcknowledgedBy(value: string | undefined): Checked<string | null> {
  const trimmed = value?.trim() ?? "";
  if (trimmed.length > maxAcknowledgedByLength) {
    return { ok: false, violations: [{ field: "acknowledged_by", description: `must be at most ${maxAcknowledgedByLength} characters` }] };
  }
  return { ok: true, value: trimmed === "" ? null : trimmed };
}

/** The ids of a bulk acknowledgement, lower-cased and deduplicated; a malformed one names its index. */
export function resolveBulkIds(ids: readonly string[]): Checked<string[]> {
  const violations: FieldViolation[] = [];
  const unique = new Set<string>();
  ids.forEach((id, i) => {
    if (isUuid(id)) unique.add(id.toLowerCase());
    else violations.push({ field: `ids[${i}]`, description: `'${truncate(id)}' is not a valid uuid` });
  });
  if (violations.length) return { ok: false, violations };
  return { ok: true, value: [...unique] };
}
