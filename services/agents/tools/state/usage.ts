// get_usage's counters per agent (agents_tool_usage): prompt and completion tokens from the
// provider's `usage`, tool calls and turns, added by each turn's record (agents/turns.ts);
// reset_usage zeroes them.
import type { EntityManager } from "@mikro-orm/postgresql";

export interface UsageCounts {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  toolCalls: number;
  turns: number;
}

export async function usageOf(em: EntityManager, agentId: string): Promise<UsageCounts> {
  const rows = await em.execute<{ p: number; c: number; t: number; n: number }[]>(
    `select "prompt_tokens"::float8 as p, "completion_tokens"::float8 as c, "tool_calls" as t, "turns" as n
       from "agents_tool_usage" where "agent_id" = ?`,
    [agentId],
  );
  const row = rows[0];
  const promptTokens = Number(row?.p ?? 0);
  const completionTokens = Number(row?.c ?? 0);
  return {
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
    toolCalls: Number(row?.t ?? 0),
    turns: Number(row?.n ?? 0),
  };
}

export async function resetUsage(em: EntityManager, agentId: string): Promise<void> {
  await em.execute(`delete from "agents_tool_usage" where "agent_id" = ?`, [agentId]);
}
