// For tests of tool families: a ToolContext over a fresh temporary workspace and data directory,
// with the default `Tools:*` settings (override any), so a family's tools can be run without the
// dispatcher. Not imported by production code.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Workspace } from "./jail.js";
import { defaultToolsSettings, type ToolsSettings, toolSettingsOf } from "./settings.js";
import type { ToolContext, ToolServices, ToolSpec } from "./tool.js";

export interface TestToolContext extends ToolContext {
  workspace: Workspace;
}

export async function testToolContext(
  options: { settings?: Partial<ToolsSettings>; services?: ToolServices; agentId?: string; sessionId?: string } = {},
): Promise<TestToolContext> {
  const base = await mkdtemp(join(tmpdir(), "tools-"));
  const settings = toolSettingsOf({ ...defaultToolsSettings(), ...options.settings }, join(base, "data"));
  const workspace = await Workspace.open(settings.workspaceRoot);
  return {
    source: "agent",
    agentId: options.agentId ?? "agent-1",
    sessionId: options.sessionId ?? "session-1",
    signal: new AbortController().signal,
    summary: false,
    settings: { ...settings, workspaceRoot: workspace.root },
    services: { workspace, ...options.services },
    workspace,
  };
}

/** The tool named `name` of a family, or a test failure naming it. */
export function toolNamed(tools: readonly ToolSpec[], name: string): ToolSpec {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(", ")}`);
  return tool;
}
