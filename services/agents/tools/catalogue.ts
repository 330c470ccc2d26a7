// The tool catalogue: every family of tools, in one list. A family is `ToolSpec[]`, or a function
// building them from what the catalogue is built with (settings, services, the dispatcher itself
// for the policy and subagent tools). Family helpers add one import line and one entry at the end.
// `buildCatalogue` checks that no two tools share a canonical or function name; `checkNames` is the
// same check for a family whose tools appear after start (remote MCP servers: the dispatcher's
// `setFamily`).
import { codeFamily } from "./code/index.js";
import { coreTools } from "./core/index.js";
import { desktopTools } from "./desktop/index.js";
import { encodingTools } from "./encoding/index.js";
import { environmentTools } from "./environment/index.js";
import { filesFamily } from "./files/index.js";
import { gitFamily } from "./git/index.js";
import { imageTools } from "./images/index.js";
import { jobsFamily } from "./jobs/index.js";
import { memoryTools } from "./memory/index.js";
import { notebookFamily } from "./notebook/index.js";
import { patchFamily } from "./patch/index.js";
import { meshRpcTools } from "./rpc/index.js";
import { shellFamily } from "./shell/index.js";
import { tailnetTools } from "./tailnet/index.js";
import { taskTools } from "./tasks/index.js";
import { webTools } from "./web/index.js";
import type { ToolDispatcher, ToolServices, ToolSettings, ToolSpec } from "./tool.js";

/** What a family built by a function gets. `dispatcher()` is the catalogue's own dispatcher (set once built). */
export interface FamilyDeps {
  settings: ToolSettings;
  services: ToolServices;
  dispatcher(): ToolDispatcher;
}

export type ToolFamily = readonly ToolSpec[] | ((deps: FamilyDeps) => readonly ToolSpec[]);

export const families: ToolFamily[] = [
  coreTools,
  filesFamily,
  shellFamily,
  patchFamily,
  gitFamily,
  codeFamily,
  jobsFamily,
  notebookFamily,
  encodingTools,
  environmentTools,
  webTools,
  memoryTools,
  taskTools,
  tailnetTools,
  desktopTools,
  imageTools,
  () => meshRpcTools(),
];

/** Every tool of every family; throws on a repeated name (a bug). */
export function buildCatalogue(deps: FamilyDeps, list: readonly ToolFamily[] = families): ToolSpec[] {
  const tools = list.flatMap((family) => (typeof family === "function" ? family(deps) : family));
  checkNames(tools);
  return tools;
}

/** Throws `two tools are named X` when two tools share a canonical or function name. */
export function checkNames(tools: readonly ToolSpec[]): void {
  const seen = new Set<string>();
  for (const tool of tools) {
    for (const name of new Set([tool.name, tool.functionName ?? tool.name])) {
      if (seen.has(name)) throw new Error(`two tools are named ${name}`);
      seen.add(name);
    }
  }
}
