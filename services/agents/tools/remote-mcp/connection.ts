// One remote MCP server of `MCP:Servers`: its client connection, kept in the background. Start-up
// never waits for it: `start()` connects (initialize, then tools/list following every cursor),
// and any failure marks the server unreachable, logs a warning naming the server and the reason
// (never the key: it is scrubbed from every reason) and tries again after a backoff that doubles
// (1 s to 60 s by default) and resets once connected. The key is read on every attempt, so a
// credential set or rotated later is picked up. A connection is given up (and made again) when the
// transport says the server is gone: for SSE any stream error; for streamable HTTP a lost or
// refused stream, a refused POST or a network failure. `notifications/tools/list_changed` lists
// the tools again. The tools listed last stay while the server is unreachable; calling one answers
// `Error: MCP server '<Name>' is unreachable: <reason>`. The key is scrubbed from answers too.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport, SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type Tool, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { LoggerLike } from "../../../runtime/logging/index.js";
import type { CredentialStore } from "../../credentials/index.js";
import type { McpServerSettings } from "../../settings.js";
import { type ToolContext, ToolError } from "../tool.js";
import { credentialNameOf, type McpTransportKind } from "./names.js";
import { resultText } from "./results.js";

/** A tools/call without the envelope's timeoutMs gives up after this long. */
export const CALL_TIMEOUT_MS = 60_000;
/** initialize and each tools/list page. */
export const LIST_TIMEOUT_MS = 30_000;
/** Pages of tools/list followed at most (a server that never stops paging). */
const MAX_PAGES = 100;
const MAX_REASON_CHARS = 300;

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 1000, maxMs: 60_000 };

export type ServerState = "connecting" | "connected" | "unreachable" | "closed";

export interface RemoteServerOptions {
  settings: McpServerSettings;
  transport: McpTransportKind;
  credentials?: Pick<CredentialStore, "get">;
  logger: Pick<LoggerLike, "info" | "warn">;
  backoff: Backoff;
  /** The server's tools were (re)listed. */
  onTools(server: RemoteMcpServer): void;
  /** An attempt failed or the connection was lost. */
  onUnreachable(server: RemoteMcpServer, reason: string): void;
}

/** A failure to put in a reason as it is (no key could be in it). */
class Unusable extends Error {}

export class RemoteMcpServer {
  readonly name: string;
  state: ServerState = "connecting";
  /** Why the server is unreachable (scrubbed), while it is. */
  reason: string | undefined;
  /** The tools as listed last; kept while the server is unreachable. */
  tools: readonly Tool[] = [];
  private client: Client | undefined;
  /** The key of the current attempt or connection, to scrub it from every message. */
  private key: string | undefined;
  private delay: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly shutdown = new AbortController();
  private refreshing = false;
  private refreshAgain = false;

  constructor(private readonly options: RemoteServerOptions) {
    this.name = options.settings.name;
    this.delay = options.backoff.initialMs;
  }

  private get closed(): boolean {
    return this.shutdown.signal.aborted;
  }

  start(): void {
    void this.attempt();
  }

  async close(): Promise<void> {
    this.state = "closed";
    this.shutdown.abort();
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  /** Calls `tool` on the server; ToolError for every failure the model should read. */
  async call(tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
    const client = this.client;
    if (!client || this.state !== "connected") throw new ToolError(this.unreachable(this.reason ?? "not connected yet"));
    const timeout = ctx.timeoutMs && ctx.timeoutMs > 0 ? ctx.timeoutMs : CALL_TIMEOUT_MS;
    let result: Record<string, unknown>;
    try {
      result = await client.callTool({ name: tool, arguments: args }, undefined, { signal: ctx.signal, timeout });
    } catch (error) {
      if (ctx.signal.aborted) throw new ToolError(`the call of '${tool}' on MCP server '${this.name}' was cancelled`);
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
        throw new ToolError(`MCP server '${this.name}' did not answer '${tool}' within ${timeout} ms`);
      const reason = this.reasonOf(error);
      if (isConnectionFailure(error)) {
        this.lost(client, reason);
        throw new ToolError(this.unreachable(reason));
      }
      throw new ToolError(`MCP server '${this.name}' refused '${tool}': ${reason}`);
    }
    try {
      return this.scrub(resultText(result));
    } catch (error) {
      if (error instanceof ToolError) throw new ToolError(this.scrub(error.message));
      throw error;
    }
  }

  private unreachable(reason: string): string {
    return `MCP server '${this.name}' is unreachable: ${reason}`;
  }

  private async attempt(): Promise<void> {
    this.timer = undefined;
    if (this.closed) return;
    let client: Client | undefined;
    try {
      const key = await this.apiKey();
      this.key = key;
      client = new Client({ name: "meshwork-agent-gateway", version: "0.1.0" }, { capabilities: {} });
      const own = client;
      own.setNotificationHandler(ToolListChangedNotificationSchema, async () => this.refresh(own));
      own.onerror = (error) => this.transportError(own, error);
      own.onclose = () => this.lost(own, "the connection closed");
      await own.connect(this.transportWith(key), { signal: this.shutdown.signal, timeout: LIST_TIMEOUT_MS });
      const tools = await this.listAll(own);
      if (this.closed) {
        await own.close().catch(() => {});
        return;
      }
      this.client = own;
      this.tools = tools;
      this.state = "connected";
      this.reason = undefined;
      this.delay = this.options.backoff.initialMs;
      this.options.logger.info({ server: this.name, tools: tools.length }, "MCP server connected");
      this.options.onTools(this);
    } catch (error) {
      if (client) {
        client.onclose = undefined;
        await client.close().catch(() => {});
      }
      if (this.closed) return;
      this.fail(this.reasonOf(error));
    }
  }

  /** MCP:Servers ApiKey, else the credential `mcp.<Name>`; an Unusable naming both when neither is set. */
  private async apiKey(): Promise<string> {
    const given = this.options.settings.apiKey;
    if (given) return given;
    const name = credentialNameOf(this.name);
    const setting = "MCP:Servers ApiKey";
    if (!name) throw new Unusable(`no API key: set ${setting} (the name cannot be a credential name)`);
    let stored: string | undefined;
    try {
      stored = await this.options.credentials?.get(name);
    } catch (error) {
      // The store's messages never carry a value or a name.
      throw new Unusable(`the credential store could not be read (${error instanceof Error ? error.message : "unknown error"})`);
    }
    if (!stored) throw new Unusable(`no API key: set ${setting} or the credential '${name}'`);
    return stored;
  }

  private transportWith(key: string): Transport {
    const url = new URL(this.options.settings.endpoint);
    const requestInit = { headers: { "X-API-Key": key } };
    return this.options.transport === "sse"
      ? new SSEClientTransport(url, { requestInit })
      : new StreamableHTTPClientTransport(url, { requestInit });
  }

  private async listAll(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await client.listTools(cursor === undefined ? undefined : { cursor }, {
        signal: this.shutdown.signal,
        timeout: LIST_TIMEOUT_MS,
      });
      tools.push(...answer.tools);
      cursor = answer.nextCursor;
      if (cursor === undefined) return tools;
      if (seen.has(cursor)) throw new Unusable("tools/list repeated a cursor");
      seen.add(cursor);
    }
    throw new Unusable(`tools/list went on past ${MAX_PAGES} pages`);
  }

  /** On notifications/tools/list_changed: lists again (one refresh at a time, one more if asked meanwhile). */
  private async refresh(client: Client): Promise<void> {
    if (client !== this.client) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.refreshAgain = false;
        try {
          const tools = await this.listAll(client);
          if (client !== this.client) return;
          this.tools = tools;
          this.options.onTools(this);
        } catch (error) {
          const reason = this.reasonOf(error);
          if (isConnectionFailure(error)) return this.lost(client, reason);
          this.options.logger.warn({ server: this.name, reason }, "could not list the MCP server's tools again; keeping the last list");
        }
      } while (this.refreshAgain && client === this.client);
    } finally {
      this.refreshing = false;
    }
  }

  private transportError(client: Client, error: Error): void {
    if (client !== this.client) return; // the attempt itself reports its failure
    if (this.options.transport === "sse" || isConnectionFailure(error)) {
      this.lost(client, this.reasonOf(error));
      return;
    }
    this.options.logger.warn({ server: this.name, reason: this.reasonOf(error) }, "MCP server transport error");
  }

  /** The connection `client` is gone: close it, mark the server unreachable, try again later. */
  private lost(client: Client, reason: string): void {
    if (client !== this.client || this.closed) return;
    this.client = undefined;
    client.onclose = undefined;
    void client.close().catch(() => {});
    this.fail(reason);
  }

  private fail(reason: string): void {
    const news = this.state !== "unreachable" || this.reason !== reason;
    this.state = "unreachable";
    this.reason = reason;
    const delay = this.delay;
    this.delay = Math.min(delay * 2, this.options.backoff.maxMs);
    if (news) this.options.logger.warn({ server: this.name, reason, retryInMs: delay }, "MCP server unreachable; retrying");
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.attempt(), delay);
    this.timer.unref();
    this.options.onUnreachable(this, reason);
  }

  /** A short reason for `error`, with the key scrubbed out. */
  private reasonOf(error: unknown): string {
    return this.scrub(describe(error)).slice(0, MAX_REASON_CHARS);
  }

  private scrub(text: string): string {
    return this.key ? text.split(this.key).join("[REDACTED]") : text;
  }
}

const authHint = " (check MCP:Servers ApiKey or the credential mcp.<Name>)";

function httpReason(status: number): string {
  return `HTTP ${status}${status === 401 || status === 403 ? authHint : ""}`;
}

function describe(error: unknown): string {
  if (error instanceof Unusable) return error.message;
  if (error instanceof StreamableHTTPError && error.code !== undefined && error.code > 0) return httpReason(error.code);
  if (error instanceof SseError && error.code !== undefined && error.code > 0) return httpReason(error.code);
  if (!(error instanceof Error)) return String(error);
  const status = /\(HTTP (\d{3})\)/.exec(error.message);
  if (status) return httpReason(Number(status[1]));
  // fetch's own failure ("fetch failed") says why in its cause: "connect ECONNREFUSED 127.0.0.1:443".
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.message === "string" && cause.message) return cause.message;
  if (cause && typeof cause.code === "string") return cause.code;
  return error.message;
}

/** Whether `error` says the connection is gone (not a refusal of one request). */
function isConnectionFailure(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  if (error instanceof StreamableHTTPError || error instanceof SseError) return true;
  if (!(error instanceof Error)) return false;
  if (error instanceof TypeError && error.message === "fetch failed") return true;
  return /SSE stream disconnected|Failed to reconnect|Maximum reconnection attempts|Error POSTing to endpoint|Not connected/.test(
    error.message,
  );
}
