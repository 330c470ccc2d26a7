// GET /api/audit/events query parameters as the ring's filter: each one checked, a bad one named
// in a 400 (the gateway already refuses a value of the wrong type, e.g. `limit=ten`).
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ListAuditEventsRequest } from "../../../gen/agents/v1/audit_pb.js";
import { type FieldViolation, invalidArgument, isUuid, truncate } from "../../runtime/errors/index.js";
import type { AuditFilter } from "./audit-ring.js";
import { type AuditSeverity, auditSeverities } from "./types.js";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

export interface AuditQuery {
  filter: AuditFilter;
  limit: number;
  offset: number;
}

export function readAuditQuery(req: ListAuditEventsRequest): AuditQuery {
  const violations: FieldViolation[] = [];
  const filter: AuditFilter = {};
  const text = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);

  filter.action = text(req.action);
  filter.userId = text(req.userId);
  filter.resource = text(req.resource);
  const severity = text(req.severity);
  if (severity !== undefined) {
    const level = severity.toLowerCase() as AuditSeverity;
    if (auditSeverities.includes(level)) filter.minSeverity = level;
    else violations.push({ field: "severity", description: `'${truncate(severity)}' is not one of ${auditSeverities.join(", ")}` });
  }
  const sessionId = text(req.sessionId);
  if (sessionId !== undefined) {
    if (isUuid(sessionId)) filter.sessionId = sessionId.toLowerCase();
    else violations.push({ field: "sessionId", description: `'${truncate(sessionId)}' is not a valid uuid` });
  }
  if (req.from) filter.from = timestampDate(req.from);
  if (req.until) filter.until = timestampDate(req.until);
  if (filter.from && filter.until && filter.until < filter.from) {
    violations.push({ field: "until", description: "must not be before from" });
  }
  const limit = req.limit ?? DEFAULT_LIMIT;
  if (limit < 1 || limit > MAX_LIMIT) violations.push({ field: "limit", description: `must be between 1 and ${MAX_LIMIT}` });
  const offset = req.offset ?? 0;
  if (offset < 0) violations.push({ field: "offset", description: "must be 0 or more" });

  if (violations.length) throw invalidArgument(violations);
  // Keys left undefined are no filter at all.
  for (const key of Object.keys(filter) as (keyof AuditFilter)[]) if (filter[key] === undefined) delete filter[key];
  return { filter, limit, offset };
}
