// What the audit ring adds to the agent gateway module: its service, table and migration, and the
// ring itself (the AuditLog every other part records with), built at start.
import { AuditService } from "../../../gen/agents/v1/audit_pb.js";
import type { Database } from "../../runtime/database/index.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import { type AuditRing, createAuditRing } from "./audit-ring.js";
import { auditService } from "./audit-service.js";
import { AgentsAudit0002, AuditEventEntity } from "./audit-table.js";

export { DEFAULT_AUDIT_CAPACITY } from "./audit-ring.js";
export type { AuditRing } from "./audit-ring.js";

export const auditParts = {
  services: [AuditService],
  entities: [AuditEventEntity],
  migrations: [{ name: "agents-0002-audit", class: AgentsAudit0002 }],
  /** The ring of `capacity` entries (AgentGateway:AuditCapacity) and the service reading it. */
  start(deps: { db: Database }, options: { capacity: number }): { ring: AuditRing; services: ServiceRegistration[] } {
    const ring = createAuditRing(options);
    return { ring, services: [defineService(AuditService, auditService({ db: deps.db, ring }))] };
  },
};
