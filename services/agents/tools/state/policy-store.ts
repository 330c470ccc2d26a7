// ToolPolicyStore in the mesh database (agents_tool_policy, agents_tool_session), so a policy set
// on one instance and a session's /autorun, /permissions and C approvals hold on every instance.
import type { EntityManager } from "@mikro-orm/postgresql";
import { type AgentToolPolicy, type ApprovalMode, approvalModes, type SessionToolState, type ToolPolicyStore } from "../policy.js";
import { ToolPolicyEntity, ToolSessionEntity } from "./tables.js";

export function dbPolicyStore(em: () => EntityManager): ToolPolicyStore {
  const sessionOf = async (sessionId: string): Promise<SessionToolState> => {
    const row = await em().findOne(ToolSessionEntity, { sessionId });
    return { autorun: row?.autorun ?? false, permissionsOff: row?.permissionsOff ?? false, approved: new Set(row?.approved ?? []) };
  };
  return {
    async agent(agentId) {
      const row = await em().findOne(ToolPolicyEntity, { agentId });
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
