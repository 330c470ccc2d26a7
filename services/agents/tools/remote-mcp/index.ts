// Remote MCP tool servers (`MCP:Servers`) as a tool family whose tools appear after start. Every
// tool a server lists is a ToolSpec of tier X whatever the server says (its annotations are not
// trusted): canonical `mcp.<Name>.<tool>`, function name per names.ts, the server's description
// and inputSchema; running it is the server's tools/call (connection.ts). The family starts every
// server in the background and hands its whole tool list to `onChange` (the dispatcher's
// `setFamily`) each time a server's list changes. Two servers whose names collapse to one tool
// name keep the first configured; the other is left out with a warning. `events` says when a
// server's tools load and when it is unreachable (tests and diagnostics wait on these).
import { EventEmitter } from "node:events";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { ConfigError } from "../../../runtime/config/index.js";
import type { LoggerLike } from "../../../runtime/logging/index.js";
import type { CredentialStore } from "../../credentials/index.js";
import type { McpServerSettings } from "../../settings.js";
import type { JsonSchema, ToolParameters, ToolSpec } from "../tool.js";
import { type Backoff, DEFAULT_BACKOFF, RemoteMcpServer, type ServerState } from "./connection.js";
import { canonicalNameOf, functionNameOfRemote, transportKindOf } from "./names.js";

export { CALL_TIMEOUT_MS, DEFAULT_BACKOFF } from "./connection.js";
export { canonicalNameOf, credentialNameOf, functionNameOfRemote, transportKindOf } from "./names.js";

/** The family's key in the dispatcher (`setFamily`). */
export const REMOTE_MCP_FAMILY = "remote-mcp";

export interface RemoteMcpOptions {
  servers: readonly McpServerSettings[];
  /** Where a server's key is read when MCP:Servers gives none (`mcp.<Name>`). */
  credentials?: Pick<CredentialStore, "get">;
  logger: Pick<LoggerLike, "info" | "warn">;
  /** Reconnection backoff; default 1 s doubling to 60 s. */
  backoff?: Backoff;
}

export interface RemoteMcpEvents {
  /** A server's tools were listed (connected, or list_changed). */
  tools: [server: string];
  /** A connection attempt failed or a connection was lost. */
  unreachable: [server: string, reason: string];
}

export interface RemoteServerStatus {
  name: string;
  state: ServerState;
  reason?: string;
  tools: number;
}

export class RemoteMcpTools {
  readonly events = new EventEmitter<RemoteMcpEvents>();
  private readonly servers: RemoteMcpServer[];
  private readonly specs = new Map<RemoteMcpServer, ToolSpec[]>();
  private readonly logger: RemoteMcpOptions["logger"];
  private onChange: ((tools: readonly ToolSpec[]) => void) | undefined;
  private readonly warned = new Set<string>();

  /** Checks the configuration (ConfigError naming the server); connects nothing yet. */
  constructor(options: RemoteMcpOptions) {
    this.logger = options.logger;
    const names = new Set<string>();
    for (const server of options.servers) {
      if (names.has(server.name))
        throw new ConfigError(`Invalid setting MCP:Servers: two servers are named ${JSON.stringify(server.name)}.`);
      names.add(server.name);
    }
    this.servers = options.servers.map(
      (settings) =>
        new RemoteMcpServer({
          settings,
          transport: transportKindOf(settings),
          credentials: options.credentials,
          logger: options.logger,
          backoff: options.backoff ?? DEFAULT_BACKOFF,
          onTools: (server) => this.listed(server),
          onUnreachable: (server, reason) => this.events.emit("unreachable", server.name, reason),
        }),
    );
  }

  /** Connects every server in the background; `onChange` gets the family's tools whenever they change. */
  start(onChange: (tools: readonly ToolSpec[]) => void): void {
    this.onChange = onChange;
    for (const server of this.servers) server.start();
  }

  /** The family's tools now: every server's last list, first configured wins a name. */
  tools(): ToolSpec[] {
    const taken = new Set<string>();
    const out: ToolSpec[] = [];
    for (const server of this.servers) {
      for (const spec of this.specs.get(server) ?? []) {
        const names = [spec.name, spec.functionName ?? spec.name];
        const clash = names.find((name) => taken.has(name));
        if (clash) {
          if (!this.warned.has(spec.name)) {
            this.warned.add(spec.name);
            this.logger.warn({ server: server.name, tool: spec.name, name: clash }, "MCP tool left out: another tool has its name");
          }
          continue;
        }
        for (const name of names) taken.add(name);
        out.push(spec);
      }
    }
    return out;
  }

  status(): RemoteServerStatus[] {
    return this.servers.map((server) => ({
      name: server.name,
      state: server.state,
      ...(server.reason ? { reason: server.reason } : {}),
      tools: server.tools.length,
    }));
  }

  async close(): Promise<void> {
    this.onChange = undefined;
    await Promise.all(this.servers.map((server) => server.close()));
  }

  private listed(server: RemoteMcpServer): void {
    this.specs.set(
      server,
      server.tools.map((tool) => toolSpecOf(server, tool)),
    );
    this.onChange?.(this.tools());
    this.events.emit("tools", server.name);
  }
}

/** The tool's inputSchema as the catalogue takes it: an object schema, `properties` always present. */
function parametersOf(schema: Tool["inputSchema"]): ToolParameters {
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  return { ...schema, type: "object", properties: properties as Record<string, JsonSchema> };
}

function toolSpecOf(server: RemoteMcpServer, tool: Tool): ToolSpec {
  const name = canonicalNameOf(server.name, tool.name);
  const functionName = functionNameOfRemote(name);
  return {
    name,
    ...(functionName !== name ? { functionName } : {}),
    description: tool.description ?? tool.title ?? `Tool '${tool.name}' of the remote MCP server '${server.name}'.`,
    tier: "X",
    parameters: parametersOf(tool.inputSchema),
    run: (args, ctx) => server.call(tool.name, args, ctx),
  };
}
