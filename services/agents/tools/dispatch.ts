// The dispatcher (ToolDispatcher of tool.ts): everything around a tool call, whatever its source
// (a turn, the ToolService, the MCP server). In order: the name resolved (canonical, function
// name, alias); `Tools:Deny` and the agent's deny (`Tool blocked: …`); the arguments (JSON, schema,
// envelope, defaults: `Error: …` naming the argument); the tool's own policy check (`Blocked by
// policy: …`); confirmation by tier (A runs, C once per session, X every call; Tools:Allow and the
// agent's allow count as A; modes prompt/auto/deny; /autorun, /permissions and
// --dangerously-skip-permissions); the run under its timeout; the result capped. Every invocation
// writes one audit entry and adds one to app.tools.invocations. The catalogue is built once from
// the families, except for families whose tools appear later (remote MCP servers): `setFamily`
// swaps in a new list, checked against every other name, so reads always see a consistent one.
import type { Counter } from "@opentelemetry/api";
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { AuditEntry } from "../audit/types.js";
import type { ToolDefinition } from "../providers/index.js";
import { aliases, runTodoWrite, todoWriteParameters } from "./aliases.js";
import { ArgumentError, checkArguments, type Envelope, parseArguments, takeEnvelope } from "./arguments.js";
import { buildCatalogue, checkNames, families as defaultFamilies, type ToolFamily } from "./catalogue.js";
import { type AgentToolPolicy, firstMatch, memoryPolicyStore, type SessionToolState, type ToolPolicyStore } from "./policy.js";
import { redact, redactArguments } from "./redact.js";
import type { ToolsSettings } from "./settings.js";
import {
  type InvokeOutcome,
  type InvokeRequest,
  PolicyBlock,
  type Tier,
  type ToolContext,
  type ToolDispatcher,
  ToolError,
  type ToolServices,
  type ToolSettings,
  type ToolSpec,
} from "./tool.js";

export interface DispatcherOptions {
  settings: ToolSettings & ToolsSettings;
  services: ToolServices;
  /** Default: every family of catalogue.ts. */
  families?: readonly ToolFamily[];
  /** Agents' policies and sessions' overrides; default in memory. */
  policies?: ToolPolicyStore;
  /** Buffered audit sink: never awaited on the call path. */
  audit: (entry: AuditEntry) => void;
  /** app.tools.invocations (meter App.Agent). */
  counter?: () => Counter | undefined;
  logger: Pick<LoggerLike, "warn" | "error">;
}

export const USER_DENIED = "User denied tool execution.";

/** How an invocation ended, as the audit's `detail.status`. */
export type InvokeStatus = "completed" | "failed" | "invalid_arguments" | "blocked" | "user_denied" | "unknown_tool" | "needs_confirmation";
type Status = InvokeStatus;
/** An outcome that is audited: every one but `needs_confirmation` (nothing ran, nothing was decided). */
type AuditedOutcome = InvokeOutcome & { outcome: Exclude<InvokeOutcome["outcome"], "needs_confirmation"> };

interface Resolved {
  tool: ToolSpec;
  canonical: string;
  tier: Tier;
  parameters: ToolSpec["parameters"];
  run: (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;
}

export class Dispatcher implements ToolDispatcher {
  /** The families built at construction. */
  private readonly builtIn: readonly ToolSpec[];
  /** Families set later (`setFamily`), by key. */
  private added = new Map<string, readonly ToolSpec[]>();
  private catalogue: ToolSpec[];
  private byName: Map<string, ToolSpec>;
  readonly policies: ToolPolicyStore;

  constructor(readonly options: DispatcherOptions) {
    this.builtIn = buildCatalogue(
      { settings: options.settings, services: options.services, dispatcher: () => this },
      options.families ?? defaultFamilies,
    );
    this.catalogue = [...this.builtIn];
    this.byName = indexByName(this.catalogue);
    this.policies = options.policies ?? memoryPolicyStore();
    if (options.settings.dangerouslySkipPermissions)
      options.logger.warn(
        {},
        "--dangerously-skip-permissions: tool confirmation and the agents' allow/deny lists are off for this process (Tools:Deny, the shell rules, the jail and the SSRF guard stay)",
      );
  }

  get settings(): ToolSettings & ToolsSettings {
    return this.options.settings;
  }

  tools(): readonly ToolSpec[] {
    return this.catalogue;
  }

  /**
   * Sets the tools of a family that appears after start (`key`: the family's own name), replacing
   * what it had; an empty list removes them. Throws `two tools are named X`, changing nothing, when
   * a name is already another tool's.
   */
  setFamily(key: string, tools: readonly ToolSpec[]): void {
    const added = new Map(this.added).set(key, [...tools]);
    const catalogue = [...this.builtIn, ...[...added.values()].flat()];
    checkNames(catalogue);
    this.added = added;
    this.catalogue = catalogue;
    this.byName = indexByName(catalogue);
  }

  resolve(name: string): ToolSpec | undefined {
    return this.byName.get(name) ?? (Object.hasOwn(aliases, name) ? this.byName.get(aliases[name]!) : undefined);
  }

  /** The names a tool answers to: canonical, function name and its aliases. */
  aliasesOf(tool: ToolSpec): string[] {
    return Object.entries(aliases)
      .filter(([, canonical]) => canonical === tool.name)
      .map(([alias]) => alias);
  }

  /** The tier a call gets: the tool's (unknown names: X). */
  tierOf(name: string): Tier {
    return this.resolve(name)?.tier ?? "X";
  }

  /**
   * What confirmation a call of `name` would need for this agent and session, without running it:
   * `deny` (blocked by a deny list or approvals off), `confirm`, or `allow`.
   */
  async decisionFor(name: string, agentId?: string, sessionId?: string): Promise<"allow" | "confirm" | "deny"> {
    const tool = this.resolve(name);
    const canonical = tool?.name ?? name;
    const tier = tool?.tier ?? "X";
    const { policy, session, skip } = await this.policyOf(agentId, sessionId);
    if (this.denyReason([name, canonical], policy, skip)) return "deny";
    const need = this.needsConfirmation(name, canonical, tier, policy, session, skip);
    return need === "no" ? "allow" : need === "deny" ? "deny" : "confirm";
  }

  /** `sessionId`: the session's /permissions off lifts the agent's deny list here too. */
  async definitions(agentId?: string, sessionId?: string): Promise<ToolDefinition[]> {
    const { policy, skip } = await this.policyOf(agentId, sessionId);
    return this.catalogue
      .filter((tool) => !this.denyReason([tool.name, tool.functionName ?? tool.name], policy, skip))
      .map((tool) => ({
        type: "function",
        function: { name: tool.functionName ?? tool.name, description: tool.description, parameters: { ...tool.parameters } },
      }));
  }

  async invoke(request: InvokeRequest): Promise<InvokeOutcome & { status: InvokeStatus }> {
    const started = performance.now();
    const name = request.name;
    const resolved = this.resolveCall(name);
    const finish = (outcome: AuditedOutcome, status: Status) => {
      this.record(request, outcome, status, performance.now() - started);
      return { ...outcome, status };
    };
    if (!resolved) {
      return finish(
        { name, canonical: name, tier: "X", outcome: "denied", output: `Error: unknown tool '${name}'`, isError: true },
        "unknown_tool",
      );
    }
    const { canonical, tier } = resolved;
    const answer = (outcome: AuditedOutcome["outcome"], output: string, isError: boolean, status: Status) =>
      finish({ name, canonical, tier, outcome, output, isError }, status);

    const { policy, session, skip } = await this.policyOf(request.agentId, request.sessionId);
    const blocked = this.denyReason([name, canonical, resolved.tool.functionName ?? canonical], policy, skip);
    if (blocked) return answer("denied", `Tool blocked: ${blocked}.`, true, "blocked");

    let args: Record<string, unknown>;
    let envelope: Envelope;
    try {
      const taken = takeEnvelope(parseArguments(request.arguments), resolved.parameters);
      envelope = taken.envelope;
      args = checkArguments(taken.rest, resolved.parameters);
    } catch (error) {
      if (error instanceof ArgumentError) return answer("ok", `Error: ${error.message}`, true, "invalid_arguments");
      throw error;
    }

    const controller = new AbortController();
    const signals = [controller.signal, ...(request.signal ? [request.signal] : [])];
    const ctx: ToolContext = {
      source: request.source,
      agentId: request.agentId,
      sessionId: request.sessionId,
      signal: signals.length === 1 ? controller.signal : AbortSignal.any(signals),
      timeoutMs: envelope.timeoutMs,
      summary: envelope.summary,
      settings: this.options.settings,
      services: this.options.services,
      ...(request.askQuestions ? { askQuestions: request.askQuestions } : {}),
    };
    try {
      await resolved.tool.check?.(args, ctx);
    } catch (error) {
      if (error instanceof PolicyBlock) return answer("denied", `Blocked by policy: ${error.message}`, true, "blocked");
      if (error instanceof ToolError) return answer("ok", `Error: ${error.message}`, true, "failed");
      throw error;
    }

    const need = this.needsConfirmation(name, canonical, tier, policy, session, skip);
    if (need === "deny")
      return answer("denied", `Blocked by policy: ${canonical} needs confirmation and approvals are off`, true, "blocked");
    if (need === "ask" && request.askFirst) {
      return { name, canonical, tier, outcome: "needs_confirmation", output: "", isError: false, status: "needs_confirmation" };
    }
    if (need === "ask") {
      const approved = request.confirm
        ? await request.confirm({ tool: name, canonical, tier, arguments: redact(args) }).catch(() => false)
        : false;
      if (!approved) return answer("user_denied", USER_DENIED, true, "user_denied");
      if (tier === "C" && request.sessionId) await this.policies.remember(request.sessionId, canonical);
    }

    const ran = await this.run(resolved, args, ctx, controller, envelope);
    return answer(ran.blocked ? "denied" : "ok", this.cap(ran.output, envelope, !ran.isError), ran.isError, ran.status);
  }

  /** The tool a name calls, with what the call is checked against (todo_write: its own schema). */
  private resolveCall(name: string): Resolved | undefined {
    const tool = this.resolve(name);
    if (!tool) return undefined;
    if (name === "todo_write" && !this.byName.has(name)) {
      return {
        tool,
        canonical: tool.name,
        tier: tool.tier,
        parameters: todoWriteParameters,
        run: (args, ctx) => runTodoWrite(args, ctx, (n) => this.resolve(n)),
      };
    }
    return { tool, canonical: tool.name, tier: tool.tier, parameters: tool.parameters, run: (args, ctx) => tool.run(args, ctx) };
  }

  private async policyOf(agentId: string | undefined, sessionId: string | undefined) {
    const [policy, session] =
      agentId && sessionId && this.policies.agentAndSession
        ? await this.policies.agentAndSession(agentId, sessionId).then((both) => [both.policy, both.session] as const)
        : await Promise.all([agentId ? this.policies.agent(agentId) : undefined, sessionId ? this.policies.session(sessionId) : undefined]);
    const skip = this.options.settings.dangerouslySkipPermissions || (session?.permissionsOff ?? false);
    return { policy, session, skip };
  }

  /** Why `names` are blocked (Tools:Deny always; the agent's deny unless permissions are off), or undefined. */
  private denyReason(names: string[], policy: AgentToolPolicy | undefined, skip: boolean): string | undefined {
    const global = firstMatch(this.options.settings.deny, names);
    if (global) return `'${names[0]}' is denied by Tools:Deny (${global})`;
    if (!skip && policy) {
      const own = firstMatch(policy.deny, names);
      if (own) return `'${names[0]}' is denied by the agent's tool policy (${own})`;
    }
    return undefined;
  }

  private needsConfirmation(
    name: string,
    canonical: string,
    tier: Tier,
    policy: AgentToolPolicy | undefined,
    session: SessionToolState | undefined,
    skip: boolean,
  ): "no" | "ask" | "deny" {
    if (tier === "A" || skip) return "no";
    const names = [name, canonical];
    if (firstMatch(this.options.settings.allow, names) || (policy && firstMatch(policy.allow, names))) return "no";
    const mode = session?.autorun ? "auto" : (policy?.approvalMode ?? this.options.settings.approval.mode);
    if (mode === "auto") return "no";
    if (mode === "deny") return "deny";
    if (tier === "C" && session?.approved.has(canonical)) return "no";
    return "ask";
  }

  private async run(
    resolved: Resolved,
    args: Record<string, unknown>,
    ctx: ToolContext,
    controller: AbortController,
    envelope: Envelope,
  ): Promise<{ output: string; isError: boolean; blocked: boolean; status: Status }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const work = resolved.run(args, ctx);
      const result =
        envelope.timeoutMs && envelope.timeoutMs > 0
          ? await Promise.race([
              work,
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => {
                  controller.abort(new Error("timeout"));
                  reject(new ToolError(`${resolved.canonical} timed out after ${envelope.timeoutMs} ms`));
                }, envelope.timeoutMs);
              }),
            ])
          : await work;
      const output = typeof result === "string" ? result : JSON.stringify(result);
      return { output, isError: false, blocked: false, status: "completed" };
    } catch (error) {
      if (error instanceof PolicyBlock)
        return { output: `Blocked by policy: ${error.message}`, isError: true, blocked: true, status: "blocked" };
      if (error instanceof ToolError || error instanceof ArgumentError)
        return { output: `Error: ${error.message}`, isError: true, blocked: false, status: "failed" };
      this.options.logger.error(
        { tool: resolved.canonical, error: error instanceof Error ? error.message : String(error) },
        "a tool failed unexpectedly",
      );
      return { output: `Error: ${resolved.canonical} failed`, isError: true, blocked: false, status: "failed" };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The result as the caller gets it: noContext → a note of its length; else cut at maxResultChars and Tools:MaxOutputChars. */
  private cap(output: string, envelope: Envelope, ran: boolean): string {
    if (ran && envelope.noContext) return `[output omitted: ${output.length} characters]`;
    const limit = Math.min(envelope.maxResultChars ?? Number.POSITIVE_INFINITY, this.options.settings.maxOutputChars);
    if (output.length <= limit) return output;
    return `${output.slice(0, limit)}\n[truncated at ${limit} of ${output.length} characters]`;
  }

  private record(request: InvokeRequest, outcome: AuditedOutcome, status: Status, durationMs: number): void {
    const entry: AuditEntry = {
      action: "tool.invoke",
      severity: outcome.outcome === "ok" ? "info" : "warning",
      resource: outcome.canonical,
      policyResult: outcome.outcome,
      ...(request.sessionId ? { sessionId: request.sessionId } : {}),
      detail: {
        status,
        alias: request.name,
        canonical: outcome.canonical,
        tier: outcome.tier,
        source: request.source,
        arguments: redactArguments(request.arguments),
        durationMs: Math.round(durationMs * 1000) / 1000,
        failed: outcome.isError,
      },
    };
    try {
      (request.audit ?? this.options.audit)(entry);
    } catch (error) {
      this.options.logger.error({ error: (error as Error).message }, "could not audit a tool invocation");
    }
    this.options.counter?.()?.add(1, {
      "gen_ai.tool.name": outcome.canonical,
      "app.tool.name": request.name,
      "app.tool.outcome": outcome.outcome,
      "gen_ai.system": request.source === "agent" ? (request.provider ?? "none") : "none",
    });
  }
}

/** Canonical and function names → their tool. */
function indexByName(tools: readonly ToolSpec[]): Map<string, ToolSpec> {
  const byName = new Map<string, ToolSpec>();
  for (const tool of tools) {
    byName.set(tool.name, tool);
    if (tool.functionName) byName.set(tool.functionName, tool);
  }
  return byName;
}
