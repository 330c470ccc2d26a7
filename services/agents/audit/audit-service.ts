// agents.v1.AuditService handlers: read the audit ring (filters checked in audit-filter.ts).
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { AuditEvent, AuditService } from "../../../gen/agents/v1/audit_pb.js";
import type { Database } from "../../runtime/database/index.js";
import { notFound, requireUuid } from "../../runtime/errors/index.js";
import { readAuditQuery } from "./audit-filter.js";
import type { AuditRing, StoredAuditEvent } from "./audit-ring.js";

export interface AuditServiceDeps {
  db: Pick<Database, "em">;
  ring: AuditRing;
}

export function auditService({ db, ring }: AuditServiceDeps): ServiceImpl<typeof AuditService> {
  return {
    async listAuditEvents(req) {
      const { filter, limit, offset } = readAuditQuery(req);
      const page = await ring.query(db.em(), filter, limit, offset);
      return { totalCount: page.totalCount, count: page.events.length, events: page.events.map(toMessage) };
    },

    async getAuditEvent(req) {
      const id = requireUuid("id", req.id);
      const found = await ring.get(db.em(), id);
      if (!found) throw notFound(`audit event ${id} not found`);
      return toMessage(found);
    },

    async getAuditStats() {
      return ring.stats(db.em(), 10);
    },
  };
}

function toMessage(event: StoredAuditEvent): Omit<AuditEvent, "$typeName" | "$unknown"> {
  return {
    eventId: event.eventId,
    timestamp: timestampFromDate(event.timestamp),
    userId: event.userId ?? undefined,
    sessionId: event.sessionId ?? undefined,
    traceId: event.traceId ?? undefined,
    action: event.action,
    resource: event.resource ?? undefined,
    detail: event.detail as AuditEvent["detail"],
    severity: event.severity,
    policyResult: event.policyResult ?? undefined,
  };
}
