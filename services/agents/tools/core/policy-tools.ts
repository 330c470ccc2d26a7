// Policy and governance (tier A): validate_permission and check_policy answer what the dispatcher
// would do with a call for this agent and session, without running it: { tool, canonical, tier,
// decision: allow|confirm|deny } (an unknown name is X); check_budget compares an estimate with the
// model's context window: { contextWindow, withinBudget }.
import type { FamilyDeps } from "../catalogue.js";
import type { Dispatcher } from "../dispatch.js";
import type { ToolContext, ToolSpec } from "../tool.js";
import { agentOf } from "./agent-of.js";
import { capabilitiesOf } from "./capabilities.js";

export function policyTools(deps: FamilyDeps): ToolSpec[] {
  const judge = async (name: string, ctx: ToolContext) => {
    const dispatcher = deps.dispatcher() as Dispatcher;
    const tool = dispatcher.resolve(name);
    return {
      tool: name,
      canonical: tool?.name ?? name,
      tier: tool?.tier ?? "X",
      decision: await dispatcher.decisionFor(name, ctx.agentId, ctx.sessionId),
    };
  };
  return [
    {
      name: "validate_permission",
      description: "Whether a tool would run for this agent now: { tool, canonical, tier, decision: allow|confirm|deny }.",
      tier: "A",
      parameters: {
        type: "object",
        properties: {
          tool: { type: "string", description: "A tool name or alias." },
          args: { type: "object", description: "The arguments it would get (not run)." },
        },
        required: ["tool"],
      },
      run: (args, ctx) => judge(String(args.tool), ctx),
    },
    {
      name: "check_policy",
      description: "The policy for an action (a tool name or alias): { tool, canonical, tier, decision: allow|confirm|deny }.",
      tier: "A",
      parameters: {
        type: "object",
        properties: {
          action: { type: "string", description: "A tool name or alias." },
          context: { type: "string", description: "What the action is for (informational)." },
        },
        required: ["action"],
      },
      run: (args, ctx) => judge(String(args.action), ctx),
    },
    {
      name: "check_budget",
      description: "Whether an estimated token count fits the model's context window: { contextWindow, withinBudget }.",
      tier: "A",
      parameters: {
        type: "object",
        properties: {
          estimatedTokens: { type: "integer", minimum: 0, description: "The tokens the next request would take." },
          model: { type: "string", description: "A model name (default: the agent's active model)." },
        },
        required: ["estimatedTokens"],
      },
      async run(args, ctx) {
        const model = typeof args.model === "string" ? args.model : (await agentOf(ctx))?.model;
        const { contextWindow } = capabilitiesOf(model);
        return { contextWindow, withinBudget: Number(args.estimatedTokens) <= contextWindow };
      },
    },
  ];
}
