// think: the model notes a thought; no side effect, the thought comes back as a note (tier A).
import { ToolError, type ToolSpec } from "../tool.js";

export const think: ToolSpec = {
  name: "think",
  description: "Think step by step about the problem. No side effects: the thought is returned as a note.",
  tier: "A",
  parameters: {
    type: "object",
    properties: { thought: { type: "string", description: "The thought to note." } },
    required: ["thought"],
  },
  async run(args) {
    const thought = String(args.thought ?? "");
    if (thought.trim() === "") throw new ToolError("think needs a thought");
    return `Thought noted: ${thought}`;
  },
};
