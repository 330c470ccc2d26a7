// `Tools:*`: the tool catalogue's settings (issue 15). One schema for every family, so the README's
// configuration table lists them all; `toolSettingsOf` turns them into the ToolSettings a tool
// gets (the workspace root made absolute, defaulting to `<AgentGateway:DataDir>/workspace`).
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { setting, stringList } from "../../runtime/config/index.js";
import type { ToolSettings } from "./tool.js";

const glob = { expected: "tool names or globs (* and ?)" };

export const toolsSettings = z.object({
  workspaceRoot: setting.string({
    description:
      "The jail of every path argument, cwd and configDir of the tools; default `<AgentGateway:DataDir>/workspace` (created at start). A relative path is taken from the working directory.",
  }),
  maxOutputChars: setting.int({
    min: 100,
    max: 100_000_000,
    default: 50_000,
    description: "Every tool result, and the output of every child process, is cut at this many characters.",
  }),
  deny: stringList({
    ...glob,
    description: "Tools refused to every agent (`Tool blocked: …`), names or aliases, globs, case-insensitive. Nothing lifts it.",
  }),
  allow: stringList({ ...glob, description: "Tools that run without confirmation for every agent (counted as tier A)." }),
  dangerouslySkipPermissions: setting.bool({
    default: false,
    flags: ["dangerously-skip-permissions"],
    description:
      "Lifts confirmation and the agents' allow/deny lists for the whole process (`--dangerously-skip-permissions`); logged as a warning. Tools:Deny, the shell rules, the jail and the SSRF guard stay.",
  }),
  approval: z.object({
    mode: setting.enum(["prompt", "auto", "deny"] as const, {
      default: "prompt",
      description: "Default approval mode of an agent: prompt asks for C and X tools, auto approves them, deny refuses them.",
    }),
    timeoutSeconds: setting.int({
      min: 1,
      max: 86_400,
      default: 60,
      description: "How long a confirmation (or ask_questions) waits for a decision; then `User denied tool execution.`",
    }),
  }),
  shell: z.object({
    deny: stringList({ expected: "program names", description: "Programs no shell line may run (the whole line is refused)." }),
    allow: stringList({ expected: "program names", description: "When set, the only programs a shell line may run." }),
    passEnv: stringList({
      expected: "environment variable names",
      description: "Variables passed to child processes besides PATH, HOME, LANG, TERM, TMPDIR, USER.",
    }),
  }),
  web: z.object({
    allowLoopback: setting.bool({ default: false, description: "web_fetch and image URLs may reach loopback addresses." }),
    allowPrivateNetworks: setting.bool({
      default: false,
      description: "web_fetch and image URLs may reach private, link-local and CGNAT addresses.",
    }),
  }),
  webSearch: z.object({
    baseUrl: setting.url({
      protocols: ["https:", "http:"],
      default: "https://api.search.brave.com",
      description: "The Brave Search API web_search calls.",
    }),
    apiKey: setting.string({
      secret: true,
      description: "The Brave Search API key (`X-Subscription-Token`); web_search answers an Error naming this setting without it.",
    }),
  }),
  git: z.object({
    authorName: setting.string({ default: "app-agent", description: "git_commit's author when the repository has no identity." }),
    authorEmail: setting.string({
      default: "agent@localhost",
      description: "git_commit's author e-mail when the repository has no identity.",
    }),
  }),
  runners: z.object({
    pipIndexUrl: setting.url({
      protocols: ["https:", "http:"],
      description: "The package index run_python installs `packages` from (pip `--index-url`); default pip's own (PyPI).",
    }),
    npmRegistry: setting.url({
      protocols: ["https:", "http:"],
      description: "The registry run_node installs `packages` from (npm `--registry`); default npm's own.",
    }),
  }),
  jobs: z.object({
    pollSeconds: setting.int({ min: 1, max: 3600, default: 5, description: "How often each instance looks for due scheduled jobs." }),
    timeoutSeconds: setting.int({
      min: 1,
      max: 86_400,
      default: 3600,
      description: "A scheduled job's command is killed after this long.",
    }),
  }),
  meshNetwork: z.object({
    apiBaseUrl: setting.url({
      protocols: ["https:", "http:"],
      default: "https://api.tailscale.com",
      description: "The Tailscale API v2 the tailnet tools call.",
    }),
    tailnet: setting.string({ default: "-", description: "The tailnet of the tailnet tools (`-`: the credential's own)." }),
    cliPath: setting.string({ default: "tailscale", description: "The tailnet CLI mesh_status runs." }),
  }),
  mcp: z.object({
    trustClientConfirmation: setting.bool({
      default: false,
      description: "MCP clients without elicitation may call C and X tools (their own confirmation is trusted).",
    }),
  }),
  mesh: z.object({
    address: setting.url({
      protocols: ["http:"],
      default: "http://127.0.0.1:9090",
      description: "The service host the mesh RPC tools call (gRPC over HTTP/2) for tracking.v1 and protection.v1.",
    }),
    apiKey: setting.string({ secret: true, description: "Sent as X-Api-Key by the mesh RPC tools to services that take API keys." }),
    bearerToken: setting.string({
      secret: true,
      description: "Sent as `Authorization: Bearer` by the mesh RPC tools to services that take bearer tokens.",
    }),
  }),
});

export type ToolsSettings = z.output<typeof toolsSettings>;

/** The settings as tools get them: paths absolute. */
export function toolSettingsOf(tools: ToolsSettings, dataDir: string, cwd = process.cwd()): ToolSettings & ToolsSettings {
  const workspaceRoot = tools.workspaceRoot
    ? isAbsolute(tools.workspaceRoot)
      ? tools.workspaceRoot
      : resolve(cwd, tools.workspaceRoot)
    : join(dataDir, "workspace");
  return { ...tools, workspaceRoot, dataDir };
}

/** Every `Tools:*` setting at its default (the loader fills nested sections; a bare parse does not). */
export function defaultToolsSettings(): ToolsSettings {
  const empty = Object.fromEntries(
    Object.entries(toolsSettings.shape)
      .filter(([, schema]) => schema instanceof z.ZodObject)
      .map(([name]) => [name, {}]),
  );
  return toolsSettings.parse(empty);
}
