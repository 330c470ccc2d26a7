// The session's confirmation overrides, typed as a message and answered `{ response }` without
// calling the provider (no turn is recorded): `/autorun [on|off]` (no argument toggles) sets auto
// approval for the session; `/permissions [off|on]` switches confirmation and the agent's allow
// and deny lists off or on (off lifts every approval mode, deny included).
import { Code } from "@connectrpc/connect";
import { notFound } from "../agents/agents.js";
import { AgentEntity } from "../agents/entities.js";
import { badRequest, refusal } from "../agents/errors.js";
import type { ToolsCore } from "./module-parts.js";

interface SlashDeps {
  db: { em(): import("@mikro-orm/postgresql").EntityManager };
  tools: ToolsCore;
}

export interface SlashAnswer {
  response: string;
  turnIndex: number;
  provider: string;
  model: string;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
}

const COMMAND = /^\/(autorun|permissions)(?:\s+(\S+))?\s*$/i;

/** The answer of a slash command, or undefined when the message is not one. */
export async function runSlashCommand(deps: SlashDeps, agentId: string, message: string): Promise<SlashAnswer | undefined> {
  const match = COMMAND.exec(message.trim());
  if (!match) return undefined;
  const agent = await deps.db.em().findOne(AgentEntity, { id: agentId });
  if (!agent) throw notFound(agentId);
  const command = match[1]!.toLowerCase();
  const arg = match[2]?.toLowerCase();
  if (arg !== undefined && arg !== "on" && arg !== "off") throw badRequest("message", `/${command} takes on or off (got ${match[2]})`);
  const policies = deps.tools.dispatcher.policies;
  const current = await policies.session(agent.sessionId);
  let response: string;
  if (command === "autorun") {
    const on = arg === undefined ? !current.autorun : arg === "on";
    await policies.setSession(agent.sessionId, { autorun: on });
    response = on
      ? "Autorun on: tools run without asking for the rest of this session."
      : "Autorun off: C and X tools ask for confirmation again.";
  } else {
    if (arg === undefined) throw refusal(Code.InvalidArgument, "/permissions takes on or off");
    const off = arg === "off";
    await policies.setSession(agent.sessionId, { permissionsOff: off });
    response = off
      ? "Permissions off: confirmation and this agent's allow and deny lists are lifted for the rest of this session (Tools:Deny, the shell rules, the jail and the SSRF guard stay)."
      : "Permissions on: confirmation and this agent's allow and deny lists apply again.";
  }
  return {
    response,
    turnIndex: agent.turnCount,
    provider: agent.provider,
    model: agent.model,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  };
}
