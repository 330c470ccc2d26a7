// ToolPolicyStore in the mesh database (agents_tool_policy, agents_tool_session), so a policy set
// on one instance and a session's /autorun, /permissions and C approvals hold on every instance.
// Every call of an agent reads both rows, so with `reads` given they are read as prepared
// statements by primary key (about 0.1 ms each on the embedded database against 0.5-0.9 ms for
// em.findOne: bench:tools), and a call with both an agent and a session reads them in one
// statement (agentAndSession).
import type { EntityManager } from "@mikro-orm/postgresql";
import type { PreparedReads } from "../../../runtime/database/index.js";
import { type AgentToolPolicy, type ApprovalMode, approvalModes, type SessionToolState, type ToolPolicyStore } from "../policy.js";
import { ToolPolicyEntity, ToolSessionEntity } from "./tables.js";

const BOTH = `select p."approval_mode", p."allow", p."deny", (p."agent_id" is not null) as "has_policy",
  s."autorun", s."permissions_off", s."approved"
  from (select 1) as "one"
  left join "agents_tool_policy" p on p."agent_id" = $1
  left join "agents_tool_session" s on s."session_id" = $2`;

interface BothRow {
  approval_mode: string | null;
  allow: string[] | null;
  deny: string[] | null;
  has_policy: boolean;
  autorun: boolean | null;
  permissions_off: boolean | null;
  approved: string[] | null;
}

const policyOf = (row: { approvalMode: string | null; allow: string[]; deny: string[] }): AgentToolPolicy => {
  const mode = approvalModes.includes(row.approvalMode as ApprovalMode) ? (row.approvalMode as ApprovalMode) : undefined;
  return { ...(mode ? { approvalMode: mode } : {}), allow: row.allow, deny: row.deny };
};

const sessionStateOf = (row: { autorun?: boolean | null; permissionsOff?: boolean | null; approved?: string[] | null } | null) => ({
  autorun: row?.autorun ?? false,
  permissionsOff: row?.permissionsOff ?? false,
  approved: new Set(row?.approved ?? []),
});

export function dbPolicyStore(em: () => EntityManager, reads?: PreparedReads): ToolPolicyStore {
  const sessionOf = async (sessionId: string): Promise<SessionToolState> =>
    sessionStateOf(reads ? await reads.byId(ToolSessionEntity, sessionId) : await em().findOne(ToolSessionEntity, { sessionId }));
  return {
    async agent(agentId) {
      const row = reads ? await reads.byId(ToolPolicyEntity, agentId) : await em().findOne(ToolPolicyEntity, { agentId });
      return row ? policyOf(row) : undefined;
    },
    ...(reads
      ? {
          async agentAndSession(agentId: string, sessionId: string) {
            const [row] = await reads.statement<BothRow>("agents_tool_policy_and_session", BOTH, [agentId, sessionId]);
            return {
              policy: row?.has_policy
                ? policyOf({ approvalMode: row.approval_mode, allow: row.allow ?? [], deny: row.deny ?? [] })
                : undefined,
              session: sessionStateOf(row ? { autorun: row.autorun, permissionsOff: row.permissions_off, approved: row.approved } : null),
            };
          },
        }
      : {}),
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
