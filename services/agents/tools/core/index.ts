// The core family: the tools tied to the dispatcher and the turn loop: think, the capability and
// policy tools, usage, ask_questions and the subagents.
import type { FamilyDeps } from "../catalogue.js";
import type { ToolSpec } from "../tool.js";
import { askQuestions } from "./ask-questions.js";
import { capabilityTools } from "./capabilities.js";
import { policyTools } from "./policy-tools.js";
import { subagentTools } from "./subagents.js";
import { think } from "./think.js";
import { usageTools } from "./usage-tools.js";

export function coreTools(deps: FamilyDeps): ToolSpec[] {
  return [think, ...capabilityTools, ...policyTools(deps), ...usageTools, askQuestions, ...subagentTools(deps)];
}
