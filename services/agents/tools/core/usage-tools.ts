// get_usage (A) and reset_usage (C): the calling agent's counters from the provider's `usage`
// (agents_tool_usage, added with each turn): { promptTokens, completionTokens, totalTokens,
// toolCalls, turns, costEstimates: [{ tier, usd }] } priced at three illustrative tiers.
import type { EntityManager } from "@mikro-orm/postgresql";
import { resetUsage, usageOf } from "../state/usage.js";
import { ToolError, type ToolContext, type ToolSpec } from "../tool.js";

/** USD per million tokens, prompt and completion. */
export const pricingTiers = [
  { tier: "economy", prompt: 0.15, completion: 0.6 },
  { tier: "standard", prompt: 2.5, completion: 10 },
  { tier: "premium", prompt: 15, completion: 75 },
] as const;

const emOf = (ctx: ToolContext, tool: string): EntityManager => {
  if (!ctx.agentId) throw new ToolError(`${tool} needs a calling agent (pass agentId)`);
  if (!ctx.services.em) throw new ToolError(`${tool} needs the mesh database`);
  return ctx.services.em() as unknown as EntityManager;
};

export const usageTools: ToolSpec[] = [
  {
    name: "get_usage",
    description:
      "This agent's usage: prompt, completion and total tokens, tool calls, turns, and cost estimates for several pricing tiers.",
    tier: "A",
    parameters: { type: "object", properties: {} },
    async run(_args, ctx) {
      const counts = await usageOf(emOf(ctx, "get_usage"), ctx.agentId!);
      const costEstimates = pricingTiers.map((p) => ({
        tier: p.tier,
        usd: Math.round(((counts.promptTokens * p.prompt + counts.completionTokens * p.completion) / 1e6) * 1e6) / 1e6,
      }));
      return { ...counts, costEstimates };
    },
  },
  {
    name: "reset_usage",
    description: "Zeroes this agent's usage counters.",
    tier: "C",
    parameters: { type: "object", properties: {} },
    async run(_args, ctx) {
      await resetUsage(emOf(ctx, "reset_usage"), ctx.agentId!);
      return "Usage counters reset.";
    },
  },
];
