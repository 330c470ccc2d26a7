// The tool catalogue's entry points: the dispatcher (dispatch.ts) over the families of
// catalogue.ts, the module parts (module-parts.ts), and the definitions of the core family as a
// fresh agent is offered them without any other family (the agents benchmark's direct call).
import type { ToolDefinition } from "../providers/index.js";
import { think } from "./core/think.js";

export { Dispatcher } from "./dispatch.js";
export { redactArguments } from "./redact.js";

/** `think` as a provider definition. */
export const toolDefinitions: ToolDefinition[] = [
  { type: "function", function: { name: think.name, description: think.description, parameters: { ...think.parameters } } },
];
