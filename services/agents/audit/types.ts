// What the agent gateway audits (GET /api/audit/events reads them back): one shape for every
// writer, so agents, sessions, tools, channels and the front's auth and rate limit record alike.
// The ring itself (AgentGateway:AuditCapacity rows in the mesh database, oldest dropped,
// shared by every instance) implements AuditLog.
import type { EntityManager } from "@mikro-orm/core";

export const auditSeverities = ["debug", "info", "warning", "error", "critical"] as const;
export type AuditSeverity = (typeof auditSeverities)[number];

export interface AuditEntry {
  /** `agent.spawn`, `agent.stop`, `session.create`, `session.close`, `channel.connect`, `tool.invoke`, `policy.deny`, `auth.failed`, ... */
  action: string;
  severity: AuditSeverity;
  /** What the action was on: a tool name, an agent id, a path. */
  resource?: string;
  /** Structured detail; never a key, a token or a credential value. */
  detail?: Record<string, unknown>;
  sessionId?: string;
  /** The API key's Name when the caller had one. Left out: the Name of the caller of the rpc being handled, if any. */
  userId?: string;
  /** Left out: the active span's trace id, if any. */
  traceId?: string;
  /** Tool invocations: `ok`, `denied` or `user_denied`. */
  policyResult?: "ok" | "denied" | "user_denied";
}

export interface AuditLog {
  /** Records the entry with the transaction of `em` (it is kept only if that transaction commits). */
  record(em: EntityManager, entry: AuditEntry): Promise<void>;
  /** Records several entries, in order, with one statement where the log can (batched writers). */
  recordMany?(em: EntityManager, entries: readonly AuditEntry[]): Promise<void>;
}
