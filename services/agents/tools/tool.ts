// What a tool of the catalogue is, and what it gets when it runs. Every family of tools (files,
// shell, git, web, memory, tasks, jobs, ...) exports `ToolSpec[]`; the dispatcher (`dispatch.ts`)
// owns everything around the call: alias resolution, the schema check, the envelope parameters,
// the deny lists, confirmation, the audit event, the counter, the output cap. A tool only
// validates what the schema cannot say, does its work inside the jail, and returns text or a record.

/** A = runs without confirmation, C = confirmed once per session, X = confirmed on every call. */
export type Tier = "A" | "C" | "X";

/** A JSON Schema of the arguments, as chat completions takes it (`type: "object"` at the top). */
export interface ToolParameters {
  type: "object";
  properties: Record<string, JsonSchema>;
  /** Exactly the parameters that have neither `?` nor a default. */
  required?: string[];
}

export interface JsonSchema {
  type?: "string" | "integer" | "number" | "boolean" | "object" | "array";
  description?: string;
  enum?: (string | number)[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
}

/** Where an invocation came from (audit `detail.source`). */
export type ToolSource = "agent" | "rpc" | "mcp";

/** The answer of a tool: plain text, or a record the dispatcher writes as JSON text. */
export type ToolResult = string | Record<string, unknown> | unknown[];

/**
 * A failure the model should read: the dispatcher answers `Error: <message>`. Throwing anything
 * else is a bug in the tool: logged, and answered `Error: <tool> failed`.
 */
export class ToolError extends Error {
  override name = "ToolError";
}

/** A refusal by the jail, the SSRF guard or the shell rules: answered `Blocked by policy: <reason>`, audited denied. */
export class PolicyBlock extends Error {
  override name = "PolicyBlock";
}

export interface ToolSpec {
  /** The canonical name, also the function name the model calls (mesh RPC tools: see `functionName`). */
  name: string;
  /** The function name when it differs from the canonical name (`rpc.a.B.C` → `rpc_a_B_C`). */
  functionName?: string;
  description: string;
  /** The documented tier; where the interface gives none, the table. */
  tier: Tier;
  parameters: ToolParameters;
  /**
   * Runs with arguments already checked against `parameters` (unknown properties dropped, the
   * envelope parameters stripped, defaults filled in).
   */
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
  /**
   * Optional: the policy checks of the jail, the SSRF guard or the shell rules that can be made
   * before running (throw PolicyBlock). The dispatcher calls it before asking for confirmation, so a
   * refused call is never put to the user; `run` must still enforce the same rules.
   */
  check?(args: Record<string, unknown>, ctx: ToolContext): Promise<void>;
}

/** What every tool gets: who calls, the jail, the settings, and the services families share. */
export interface ToolContext {
  source: ToolSource;
  /** The calling agent; unset for rpc and MCP calls made without one. */
  agentId?: string;
  /** The agent's session (MCP: the MCP session); confirmation of C tools is remembered per session. */
  sessionId?: string;
  /** Aborted on timeout (`timeoutMs` of the envelope, else the tool's own) or when the caller gives up. */
  signal: AbortSignal;
  /** The envelope's `timeoutMs`, when given: overrides the tool's own timeout where it has one. */
  timeoutMs?: number;
  /** The envelope's `summary`: the tool may answer a compact form. */
  summary: boolean;
  /** `Tools:*` as loaded. */
  settings: ToolSettings;
  services: ToolServices;
  /**
   * How ask_questions asks when the caller has a live client (a /hubs/agent turn: its AskQuestions
   * client method), copied from the invocation; unset, it waits as a pending `questions` item.
   */
  askQuestions?: import("./core/ask-questions.js").QuestionsAsker;
}

/**
 * `Tools:*` settings. Families add their own fields here (with their defaults in `settings.ts`),
 * and every one is a row of the README's configuration table.
 */
export interface ToolSettings {
  /** `Tools:WorkspaceRoot`, absolute; default `<AgentGateway:DataDir>/workspace`. */
  workspaceRoot: string;
  /** `AgentGateway:DataDir`, absolute (configDir may be it). */
  dataDir: string;
  /** `Tools:MaxOutputChars` (50000): every result, and child output, is capped at this. */
  maxOutputChars: number;
  [family: string]: unknown;
}

/**
 * What the dispatcher hands to tools. Filled in by the module (services/agents/index.ts); a family
 * that needs more adds a field here, optional until it is wired.
 */
export interface ToolServices {
  /** The jail of every path argument (`Tools:WorkspaceRoot`). */
  workspace: import("./jail.js").Workspace;
  /** The mesh database (memory, tasks, jobs): a fresh fork per use. */
  em?: () => import("@mikro-orm/core").EntityManager;
  /** The agent's provider and model, for image tools and subagents. */
  chat?: (agentId: string | undefined, request: ToolChatRequest) => Promise<string>;
  /** The values of the configured secret settings (get_environment masks them); the Tools:* ones are found without it. */
  secrets?: () => readonly string[];
  /** The credential store (mesh_configure keeps the tailnet credential there). */
  credentials?: import("../credentials/index.js").CredentialStore;
  /** Test seam: the environment the tailnet and desktop tools read instead of process.env. */
  environment?: Record<string, string | undefined>;
  /** Test seam: how the SSRF guard resolves host names (DNS by default). */
  hostResolver?: import("./web/ssrf.js").HostResolver;
  /** The transport of the mesh RPC tools; a gRPC client to Tools:Mesh:Address when unset. */
  meshTransport?: import("@connectrpc/connect").Transport;
  [service: string]: unknown;
}

export interface ToolChatRequest {
  messages: unknown[];
  /** Tools offered to a child turn (subagents); none for image questions. */
  tools?: string[];
  signal?: AbortSignal;
}

/** One call into the catalogue, from a turn, the ToolService or the MCP server. */
export interface InvokeRequest {
  /** As called: a canonical name, a function name or an alias. */
  name: string;
  /** The arguments as the model sent them (JSON text) or as an rpc/MCP client sent them (an object). */
  arguments: string | Record<string, unknown>;
  source: ToolSource;
  agentId?: string;
  sessionId?: string;
  signal?: AbortSignal;
  /**
   * Asks whoever called for a C or X tool (the hub's ConfirmTool, a pending approval, MCP
   * elicitation, the rpc's `confirm` flag). Resolves true to run; false (or the approval
   * timeout) answers `User denied tool execution.`
   */
  confirm?: (question: ConfirmQuestion) => Promise<boolean>;
  /**
   * When the call needs a confirmation: nothing runs and nothing is audited, the outcome is
   * `needs_confirmation` (the MCP server asks its own client, then calls again with `confirm`).
   */
  askFirst?: boolean;
  /** How ask_questions asks a live client (a /hubs/agent turn's AskQuestions); becomes `ToolContext.askQuestions`. */
  askQuestions?: import("./core/ask-questions.js").QuestionsAsker;
  /** The agent's provider (counter attribute `gen_ai.system`); `none` when unset. */
  provider?: string;
  /**
   * Where the invocation's audit entry goes instead of the dispatcher's buffered sink (a turn keeps
   * its entries to write them with the turn's transaction).
   */
  audit?: (entry: import("../audit/types.js").AuditEntry) => void;
}

export interface ConfirmQuestion {
  tool: string;
  canonical: string;
  tier: Tier;
  /** Redacted. */
  arguments: unknown;
}

export interface InvokeOutcome {
  /** As called. */
  name: string;
  canonical: string;
  tier: Tier;
  outcome: "ok" | "denied" | "user_denied" | "needs_confirmation";
  /** The text the model (or the client) gets: the result, `Error: …`, `Tool blocked: …`, `Blocked by policy: …`, `User denied tool execution.` */
  output: string;
  isError: boolean;
}

/** The catalogue as the turn loop, the ToolService, the MCP server and the policy tools see it. */
export interface ToolDispatcher {
  /** The tools available to an agent under its current policy (denied ones left out), as provider tool definitions. */
  definitions(agentId?: string): Promise<import("../providers/index.js").ToolDefinition[]>;
  /** Every tool of the catalogue, denied or not. */
  tools(): readonly ToolSpec[];
  /** A name as called → its tool (aliases and function names resolved), or undefined. */
  resolve(name: string): ToolSpec | undefined;
  invoke(request: InvokeRequest): Promise<InvokeOutcome>;
}
