// The audit ring's table: one row per entry, numbered by an identity sequence that orders the ring
// (newest = highest) and tells each writer which rows fell out of it.
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export const AUDIT_TABLE = "agents_audit_event";

export interface AuditEventRow {
  eventId: string;
  timestamp: Date;
  userId: string | null;
  sessionId: string | null;
  traceId: string | null;
  action: string;
  resource: string | null;
  detail: Record<string, unknown>;
  /** Rank in auditSeverities: 0 debug … 4 critical, so "at least warning" is one comparison. */
  severity: number;
  policyResult: string | null;
}

// Mapped for the ORM's view of the schema; the ring reads and writes with SQL of its own. The table
// also has the `seq` identity column (the ring's order), left unmapped as the outbox does, so the
// database always assigns it.
export const AuditEventEntity = new EntitySchema<AuditEventRow>({
  name: "AgentsAuditEvent",
  tableName: AUDIT_TABLE,
  properties: {
    eventId: { type: "uuid", primary: true },
    timestamp: { type: "datetime", columnType: "timestamptz" },
    userId: { type: "text", nullable: true },
    sessionId: { type: "text", nullable: true },
    traceId: { type: "text", nullable: true },
    action: { type: "text" },
    resource: { type: "text", nullable: true },
    detail: { type: "json", columnType: "jsonb" },
    severity: { type: "smallint" },
    policyResult: { type: "text", nullable: true },
  },
});

// The database's clock stamps each entry (one clock for every instance), to the millisecond: what
// the API shows is exactly what `from` and `until` compare.
export class AgentsAudit0002 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "${AUDIT_TABLE}" (
      "seq" bigint generated always as identity primary key,
      "event_id" uuid not null unique,
      "timestamp" timestamptz not null default date_trunc('milliseconds', clock_timestamp()),
      "user_id" text null,
      "session_id" text null,
      "trace_id" text null,
      "action" text not null,
      "resource" text null,
      "detail" jsonb not null default '{}'::jsonb,
      "severity" smallint not null,
      "policy_result" text null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "${AUDIT_TABLE}"`);
  }
}
