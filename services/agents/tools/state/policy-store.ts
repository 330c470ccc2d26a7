// ToolPolicyStore in the mesh database (agents_tool_policy, agents_tool_session), so a policy set
// on one instance and a session's /autorun, /permissions and C approvals hold on every instance.
// Every call of an agent reads both rows, so with `reads` given they are read as prepared
// statements by primary key (about 0.1 ms each on the embedded database against 0.5-0.9 ms for
// em.findOne: bench:tools).
import type { EntityManager } from "@mikro-orm/postgresql";
import type { PreparedReads } from "../../../runtime/database/index.js";
import { type AgentToolPolicy, type ApprovalMode, approvalModes, type SessionToolState, type ToolPolicyStore } from "../policy.js";
import { ToolPolicyEntity, ToolSessionEntity } from "./tables.js";

export function dbPolicyStore(em: () => EntityManager, reads?: PreparedReads): ToolPolicyStore {
  const sessionOf = async (sessionId: string): Promise<SessionToolState> => {
    const row = reads ? await reads.byId(ToolSessionEntity, sessionId) : await em().findOne(ToolSessionEntity, { sessionId });
    return { autorun: row?.autorun ?? false, permissionsOff: row?.permissionsOff ?? false, approved: new Set(row?.approved ?? []) };
  };
  return {
    async agent(agentId) {
      const row = reads ? await reads.byId(ToolPolicyEntity, agentId) : await em().findOne(ToolPolicyEntity, { agentId });
      if (!row) return undefined;
      const mode = approvalModes.includes(row.approvalMode as ApprovalMode) ? (row.approvalMode as ApprovalMode) : undefined;
      return { ...(mode ? { approvalMode: mode } : {}), allow: row.allow, deny: row.deny } satisfies AgentToolPolicy;
    },
    async setAgent(agentId, policy) {
      await em().upsert(ToolPolicyEntity, {
        agentId,
        approvalMode: policy.approvalMode ?? null,
        allow: policy.allow,
        deny: policy.deny,
        updatedAt: new Date(),
      });
    },
    session: sessionOf,
    async setSession(sessionId, change) {
      const sets: string[] = [];
      const values: unknown[] = [];
      if (change.autorun !== undefined) {
        sets.push(`"autorun" = ?`);
        values.push(change.autorun);
      }
      if (change.permissionsOff !== undefined) {
        sets.push(`"permissions_off" = ?`);
        values.push(change.permissionsOff);
      }
      await em().execute(
        `insert into "agents_tool_session" ("session_id", "autorun", "permissions_off") values (?, ?, ?)
         on conflict ("session_id") do ${sets.length ? `update set ${sets.join(", ")}` : "nothing"}`,
        [sessionId, change.autorun ?? false, change.permissionsOff ?? false, ...values],
      );
      return sessionOf(sessionId);
    },
    async remember(sessionId, canonical) {
      // One statement: concurrent approvals on several instances all land.
      await em().execute(
        `insert into "agents_tool_session" ("session_id", "approved") values (?, jsonb_build_array(?::text))
         on conflict ("session_id") do update set "approved" =
           case when "agents_tool_session"."approved" @> jsonb_build_array(?::text) then "agents_tool_session"."approved"
                else "agents_tool_session"."approved" || jsonb_build_array(?::text) end`,
        [sessionId, canonical, canonical, canonical],
      );
    },
    async forgetSession(sessionId) {
      await em().nativeDelete(ToolSessionEntity, { sessionId });
    },
  };
}
