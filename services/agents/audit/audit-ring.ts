// The audit ring: the last `capacity` entries in the mesh database, shared by every instance and
// kept across restarts. A write is one statement: the insert takes the next number of an identity
// sequence and, in the same statement, deletes the rows that number pushed out of the ring
// (seq ≤ new − capacity). Rows another writer is deleting at that moment are skipped (SKIP LOCKED),
// so concurrent writers on several instances never wait for each other; a row a rolled-back trim
// left behind goes with the next write. Reads only look at the last `capacity` numbers, so the
// ring never shows more than `capacity` entries even while a trim is in flight.
import { randomUUID } from "node:crypto";
import { isSpanContextValid, trace } from "@opentelemetry/api";
import type { EntityManager } from "@mikro-orm/core";
import { currentIdentity } from "../../runtime/auth/identity.js";
import { queryOn } from "../../runtime/outbox/sql.js";
import { AUDIT_TABLE } from "./audit-table.js";
import { type AuditEntry, type AuditLog, type AuditSeverity, auditSeverities } from "./types.js";

export const DEFAULT_AUDIT_CAPACITY = 10_000;

/** An entry as the ring answers it. */
export interface StoredAuditEvent {
  eventId: string;
  timestamp: Date;
  userId: string | null;
  sessionId: string | null;
  traceId: string | null;
  action: string;
  resource: string | null;
  detail: Record<string, unknown>;
  severity: AuditSeverity;
  policyResult: string | null;
}

/** Filters of a query, each optional; every one given must match. */
export interface AuditFilter {
  action?: string;
  /** The least severity. */
  minSeverity?: AuditSeverity;
  sessionId?: string;
  userId?: string;
  resource?: string;
  /** Inclusive. */
  from?: Date;
  /** Inclusive. */
  until?: Date;
}

export interface AuditPage {
  totalCount: number;
  events: StoredAuditEvent[];
}

export interface AuditStatistics {
  totalEvents: number;
  bySeverity: Record<AuditSeverity, number>;
  topActions: { action: string; count: number }[];
}

export interface AuditRing extends AuditLog {
  readonly capacity: number;
  /** Matching entries newest first: `limit` of them after skipping `offset`, and how many match. */
  query(em: EntityManager, filter: AuditFilter, limit: number, offset: number): Promise<AuditPage>;
  /** One entry still in the ring. */
  get(em: EntityManager, eventId: string): Promise<StoredAuditEvent | undefined>;
  /** Counts over the whole ring; the `top` most frequent actions (most first, then by name). */
  stats(em: EntityManager, top?: number): Promise<AuditStatistics>;
}

export interface AuditRingOptions {
  /** AgentGateway:AuditCapacity: the most entries kept (≥ 1). */
  capacity: number;
}

const COLUMNS = `"event_id", "timestamp", "user_id", "session_id", "trace_id", "action", "resource", "detail", "severity", "policy_result"`;

// The numbers still in the ring: the last `capacity` of the sequence (bound as the one parameter).
const IN_RING = `"seq" > (select coalesce(max("seq"), 0) from "${AUDIT_TABLE}") - ?`;

const INSERT_AND_TRIM = `with added as (
  insert into "${AUDIT_TABLE}" ("event_id", "user_id", "session_id", "trace_id", "action", "resource", "detail", "severity", "policy_result")
  values (?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)
  returning "seq"
)
delete from "${AUDIT_TABLE}" where "seq" in (
  select "seq" from "${AUDIT_TABLE}" where "seq" <= (select "seq" from added) - ? order by "seq" for update skip locked
)`;

/** The insert's values of one entry (the severity checked; who and which trace filled in when the writer did not say). */
function rowOf(entry: AuditEntry): unknown[] {
  const severity = auditSeverities.indexOf(entry.severity);
  if (severity < 0) throw new Error(`unknown audit severity "${entry.severity}"`);
  // The caller of the rpc being handled (anonymous outside one) and its active span.
  const userId = entry.userId ?? currentIdentity().name;
  const traceId = entry.traceId ?? activeTraceId();
  return [
    randomUUID(),
    storable(userId),
    storable(entry.sessionId),
    storable(traceId),
    storable(entry.action),
    storable(entry.resource),
    JSON.stringify(storableJson(entry.detail ?? {})),
    severity,
    storable(entry.policyResult),
  ];
}

export function createAuditRing(options: AuditRingOptions): AuditRing {
  const { capacity } = options;
  if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`the audit capacity must be a whole number ≥ 1 (got ${capacity})`);

  return {
    capacity,

    async record(em, entry) {
      await queryOn(em)(INSERT_AND_TRIM, [...rowOf(entry), capacity]);
    },

    async recordMany(em, entries) {
      if (entries.length === 0) return;
      // One statement per batch: the rows in order (their seq follows), then one trim of the older
      // rows (the statement's own rows are not visible to its delete, so of a batch longer than the
      // ring only its newest `capacity` entries are written: the others would be dropped at once).
      const rows = entries.map(rowOf).slice(-capacity);
      const values = rows.map(() => "(?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)").join(", ");
      await queryOn(em)(
        `with added as (
  insert into "${AUDIT_TABLE}" ("event_id", "user_id", "session_id", "trace_id", "action", "resource", "detail", "severity", "policy_result")
  values ${values}
  returning "seq"
)
delete from "${AUDIT_TABLE}" where "seq" in (
  select "seq" from "${AUDIT_TABLE}" where "seq" <= (select max("seq") from added) - ? order by "seq" for update skip locked
)`,
        [...rows.flat(), capacity],
      );
    },

    async query(em, filter, limit, offset) {
      const { where, params } = conditions(filter);
      const query = queryOn(em);
      const [counted] = await query<{ total: string | number }>(
        `select count(*) as "total" from "${AUDIT_TABLE}" where ${IN_RING}${where}`,
        [capacity, ...params],
      );
      const rows = await query<RawRow>(
        `select ${COLUMNS} from "${AUDIT_TABLE}" where ${IN_RING}${where} order by "seq" desc limit ? offset ?`,
        [capacity, ...params, limit, offset],
      );
      return { totalCount: Number(counted?.total ?? 0), events: rows.map(toEvent) };
    },

    async get(em, eventId) {
      const rows = await queryOn(em)<RawRow>(`select ${COLUMNS} from "${AUDIT_TABLE}" where ${IN_RING} and "event_id" = ?`, [
        capacity,
        eventId,
      ]);
      return rows[0] ? toEvent(rows[0]) : undefined;
    },

    async stats(em, top = 10) {
      const query = queryOn(em);
      const severities = await query<{ severity: number; count: string | number }>(
        `select "severity", count(*) as "count" from "${AUDIT_TABLE}" where ${IN_RING} group by "severity"`,
        [capacity],
      );
      const actions = await query<{ action: string; count: string | number }>(
        `select "action", count(*) as "count" from "${AUDIT_TABLE}" where ${IN_RING}
         group by "action" order by count(*) desc, "action" asc limit ?`,
        [capacity, top],
      );
      const bySeverity = Object.fromEntries(auditSeverities.map((s) => [s, 0])) as Record<AuditSeverity, number>;
      let totalEvents = 0;
      for (const row of severities) {
        const name = auditSeverities[Number(row.severity)];
        if (name === undefined) continue;
        bySeverity[name] = Number(row.count);
        totalEvents += Number(row.count);
      }
      return { totalEvents, bySeverity, topActions: actions.map((a) => ({ action: a.action, count: Number(a.count) })) };
    },
  };
}

function conditions(filter: AuditFilter): { where: string; params: unknown[] } {
  let where = "";
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    where += ` and ${sql}`;
    params.push(value);
  };
  if (filter.action !== undefined) add(`"action" = ?`, filter.action);
  if (filter.minSeverity !== undefined) add(`"severity" >= ?`, auditSeverities.indexOf(filter.minSeverity));
  if (filter.sessionId !== undefined) add(`"session_id" = ?`, filter.sessionId);
  if (filter.userId !== undefined) add(`"user_id" = ?`, filter.userId);
  if (filter.resource !== undefined) add(`"resource" = ?`, filter.resource);
  if (filter.from !== undefined) add(`"timestamp" >= ?`, filter.from);
  if (filter.until !== undefined) add(`"timestamp" <= ?`, filter.until);
  return { where, params };
}

interface RawRow {
  event_id: string;
  timestamp: Date | string;
  user_id: string | null;
  session_id: string | null;
  trace_id: string | null;
  action: string;
  resource: string | null;
  detail: Record<string, unknown> | string | null;
  severity: number | string;
  policy_result: string | null;
}

function toEvent(row: RawRow): StoredAuditEvent {
  const detail = typeof row.detail === "string" ? (JSON.parse(row.detail) as Record<string, unknown>) : (row.detail ?? {});
  return {
    eventId: row.event_id,
    // pg answers timestamptz as text here (MikroORM turns its type parser off).
    timestamp: row.timestamp instanceof Date ? row.timestamp : new Date(row.timestamp),
    userId: row.user_id,
    sessionId: row.session_id,
    traceId: row.trace_id,
    action: row.action,
    resource: row.resource,
    detail,
    severity: auditSeverities[Number(row.severity)] ?? "info",
    policyResult: row.policy_result,
  };
}

function activeTraceId(): string | undefined {
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? context.traceId : undefined;
}

/**
 * Text PostgreSQL can store: an audit write must never fail the work it records because a tool's
 * argument held a NUL or half a surrogate pair (both replaced by U+FFFD).
 */
function storable(value: string | undefined | null): string | null {
  if (value === undefined || value === null) return null;
  return value.replace(UNSTORABLE, "\uFFFD");
}

const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The detail as JSON PostgreSQL's jsonb takes: storable strings and keys, big integers as text, nothing that is not JSON. */
function storableJson(value: unknown): unknown {
  if (typeof value === "string") return storable(value);
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return typeof value === "number" && !Number.isFinite(value) ? null : value;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(storableJson);
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner === undefined || typeof inner === "function" || typeof inner === "symbol") continue;
    out[storable(key)!] = storableJson(inner);
  }
  return out;
}
