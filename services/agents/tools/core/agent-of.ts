// The calling agent's row (provider, model, session), for the core tools that answer about it.
import type { EntityManager } from "@mikro-orm/postgresql";
import { AgentEntity, type AgentRow } from "../../agents/entities.js";
import { ToolError, type ToolContext } from "../tool.js";

/** The calling agent, or undefined (no agent, or no database in this context). */
export async function agentOf(ctx: ToolContext): Promise<AgentRow | undefined> {
  if (!ctx.agentId || !ctx.services.em) return undefined;
  const em = ctx.services.em() as unknown as EntityManager;
  return (await em.findOne(AgentEntity, { id: ctx.agentId })) ?? undefined;
}

/** The calling agent, or a ToolError naming the tool that needs one. */
export async function requireAgent(ctx: ToolContext, tool: string): Promise<AgentRow> {
  const agent = await agentOf(ctx);
  if (!agent) throw new ToolError(`${tool} needs a calling agent (pass agentId)`);
  return agent;
}
