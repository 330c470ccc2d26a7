// The MCP server at /mcp on the agent front: streamable HTTP (@modelcontextprotocol/sdk), one
// stateful session per client. It is a translation of its own, like the REST routes: tools/list is
// ToolService.ListTools and tools/call is ToolService.InvokeTool, reached through the front's
// transport with the caller's X-API-Key, so the same dispatcher, policy, audit (source `mcp`,
// the MCP session as the policy session) and counter apply wherever the service runs.
//
// Decisions:
// - A session is opened by an initialize whose key lists tools (User); its later requests must
//   carry the same key (401 otherwise). Calls need Operator, as InvokeTool does.
// - C and X tools: the call goes first with `ask_first`; when the service answers
//   `needs_confirmation`, a client that declared elicitation is asked `{ approve: boolean }`
//   (within Tools:Approval:TimeoutSeconds) and the call goes again with its answer. A client
//   without elicitation gets `User denied tool execution.` unless Tools:Mcp:TrustClientConfirmation.
// - At most MAX_SESSIONS sessions (then 503 with Retry-After); a session idle for
//   SESSION_IDLE_MS is closed.
import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client, createClient, type Transport } from "@connectrpc/connect";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { ToolService } from "../../../gen/agents/v1/tool_pb.js";
import { normalizeAddress } from "../../runtime/host/index.js";
import type { FrontRoute } from "../../runtime/module/index.js";

export const MCP_PATH = "/mcp";
export const MAX_SESSIONS = 1000;
export const SESSION_IDLE_MS = 30 * 60 * 1000;
const RETRY_AFTER_SECONDS = 5;

export interface McpServerOptions {
  transport: Transport;
  logger: Logger;
  /** Tools:Approval:TimeoutSeconds, read on each ask. */
  approvalTimeoutSeconds(): number;
  /** Tools:Mcp:TrustClientConfirmation, read on each call. */
  trustClientConfirmation(): boolean;
  /** Sent to clients in the initialize answer. */
  version: string;
  /** The session limits (tests shrink them); MAX_SESSIONS, SESSION_IDLE_MS and a sweep a minute by default. */
  limits?: Partial<McpLimits>;
}

export interface McpLimits {
  maxSessions: number;
  sessionIdleMs: number;
  /** How often idle sessions are looked for. */
  sweepIntervalMs: number;
  now(): number;
}

interface Session {
  readonly id: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** SHA-256 of the key that opened it (empty: none). */
  readonly keyDigest: Buffer;
  clientAddress: string;
  lastSeen: number;
}

/** The /mcp route of the agent front. */
export function mcpRoute(options: McpServerOptions): FrontRoute {
  const tools = createClient(ToolService, options.transport);
  const limits: McpLimits = {
    maxSessions: MAX_SESSIONS,
    sessionIdleMs: SESSION_IDLE_MS,
    sweepIntervalMs: 60_000,
    now: Date.now,
    ...options.limits,
  };
  const sessions = new Map<string, Session>();
  const sweep = setInterval(() => {
    const now = limits.now();
    for (const session of sessions.values()) if (now - session.lastSeen > limits.sessionIdleMs) void session.transport.close();
  }, limits.sweepIntervalMs);
  sweep.unref();

  const open = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    if (sessions.size >= limits.maxSessions) {
      res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
      return jsonRpcError(res, 503, -32000, `too many MCP sessions (${limits.maxSessions}); retry later`);
    }
    // The key must list tools (User) before a session exists.
    try {
      await tools.listTools({}, { headers: callHeaders(req.headers, clientAddressOf(req)) });
    } catch (error) {
      const refused = refusalOf(error);
      if (refused) {
        if (refused.status === 503 || refused.status === 429) res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
        return jsonRpcError(res, refused.status, -32001, refused.message);
      }
      throw error;
    }
    let session: Session | undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        if (session) sessions.set(id, session);
      },
    });
    const server = sessionServer(options, tools, () => session);
    session = {
      get id() {
        return transport.sessionId ?? "";
      },
      transport,
      server,
      keyDigest: keyDigestOf(req.headers),
      clientAddress: clientAddressOf(req),
      lastSeen: limits.now(),
    };
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
      options.logger.debug({ mcpSession: transport.sessionId }, "MCP session closed");
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    if (transport.sessionId) options.logger.debug({ mcpSession: transport.sessionId }, "MCP session opened");
  };

  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const id = headerOf(req.headers, "mcp-session-id");
    if (id === undefined) {
      if (req.method !== "POST")
        return jsonRpcError(res, 400, -32000, "no mcp-session-id: open a session with an initialize request first");
      const body = await readJson(req, res);
      if (body === undefined) return;
      if (!isInitializeRequest(body))
        return jsonRpcError(res, 400, -32000, "no mcp-session-id: open a session with an initialize request first");
      return open(req, res, body);
    }
    const session = sessions.get(id);
    if (!session) return jsonRpcError(res, 404, -32001, "unknown or closed MCP session: open a new one with initialize");
    if (!timingSafeEqual(keyDigestOf(req.headers), session.keyDigest))
      return jsonRpcError(res, 401, -32001, "the session was opened with another API key");
    session.lastSeen = limits.now();
    session.clientAddress = clientAddressOf(req);
    await session.transport.handleRequest(req, res);
  };

  return {
    path: MCP_PATH,
    handle(req, res) {
      serve(req, res).catch((error: unknown) => {
        options.logger.error({ error: error instanceof Error ? error.message : String(error) }, "MCP request failed");
        if (!res.headersSent) jsonRpcError(res, 500, ErrorCode.InternalError, "internal error");
        else res.end();
      });
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((session) => session.transport.close()));
      sessions.clear();
    },
  };
}

/** The MCP server of one session: tools/list and tools/call through the ToolService. */
function sessionServer(options: McpServerOptions, tools: Client<typeof ToolService>, session: () => Session | undefined): Server {
  const server = new Server({ name: "meshwork-agent-gateway", version: options.version }, { capabilities: { tools: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const current = session();
    const listed = await call(() => tools.listTools({}, { headers: callHeaders(extra.requestInfo?.headers, current?.clientAddress) }));
    return {
      tools: listed.tools.map(
        (tool): Tool => ({
          name: tool.functionName,
          description: tool.description,
          inputSchema: (tool.parameters ?? { type: "object" }) as Tool["inputSchema"],
          annotations: { readOnlyHint: tool.tier === "A" },
        }),
      ),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const current = session();
    const headers = callHeaders(extra.requestInfo?.headers, current?.clientAddress);
    const base = {
      name: request.params.name,
      arguments: (request.params.arguments ?? {}) as JsonObject,
      mcpSessionId: current?.id ?? extra.sessionId ?? "unknown",
    };
    const invoke = (confirm: boolean, askFirst: boolean) =>
      call(() => tools.invokeTool({ ...base, confirm, askFirst }, { headers, signal: extra.signal }));
    let answer: { name: string; canonical: string; tier: string; outcome: string; output: string; isError: boolean };
    try {
      answer = await invoke(false, true);
    } catch (error) {
      // Arguments that do not fit the schema: a result the model can correct, as in a turn.
      if (error instanceof ArgumentsRefused) return { content: [{ type: "text", text: `Error: ${error.message}` }], isError: true };
      throw error;
    }
    if (answer.outcome === "needs_confirmation") {
      const approved = await confirmWithClient(server, options, answer.name, answer.canonical, answer.tier, base.arguments);
      answer = await invoke(approved, false);
    }
    return { content: [{ type: "text", text: answer.output }], isError: answer.isError };
  });

  return server;
}

/** Asks the client (elicitation) whether a C or X tool may run; without elicitation, the trust setting decides. */
async function confirmWithClient(
  server: Server,
  options: McpServerOptions,
  name: string,
  canonical: string,
  tier: string,
  args: JsonObject,
): Promise<boolean> {
  if (!server.getClientCapabilities()?.elicitation) return options.trustClientConfirmation();
  try {
    const result = await server.elicitInput(
      {
        message: `Run ${canonical} (tier ${tier})${name !== canonical ? ` as called: ${name}` : ""}? Arguments: ${JSON.stringify(args).slice(0, 2000)}`,
        requestedSchema: {
          type: "object",
          properties: { approve: { type: "boolean", title: "Approve", description: `Let the tool ${canonical} run.` } },
          required: ["approve"],
        },
      },
      { timeout: options.approvalTimeoutSeconds() * 1000 },
    );
    return result.action === "accept" && result.content?.approve === true;
  } catch {
    // No answer in time, or the client failed the request: not approved.
    return false;
  }
}

/** InvokeTool refused the arguments (400): the call's result is the error, not the protocol's. */
class ArgumentsRefused extends Error {}

/** Runs a ToolService call; its refusals become MCP errors a client can read (never a bare 500). */
async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    switch (error.code) {
      case Code.InvalidArgument:
        throw new ArgumentsRefused(error.rawMessage);
      case Code.NotFound:
        throw new McpError(ErrorCode.InvalidParams, error.rawMessage);
      case Code.Unauthenticated:
      case Code.PermissionDenied:
        throw new McpError(-32001, error.rawMessage);
      case Code.Unavailable:
      case Code.ResourceExhausted:
        throw new McpError(-32000, `${error.rawMessage} (retry later)`);
      default:
        throw new McpError(ErrorCode.InternalError, "the tool call failed");
    }
  }
}

const FORWARDED = ["x-api-key", "authorization", "traceparent", "tracestate"] as const;

function callHeaders(from: Record<string, string | string[] | undefined> | undefined, clientAddress: string | undefined) {
  const out: Record<string, string> = { "x-request-id": randomUUID() };
  if (clientAddress) out["x-meshwork-client-address"] = clientAddress;
  for (const name of FORWARDED) {
    const value = from ? headerOf(from, name) : undefined;
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function keyDigestOf(headers: IncomingMessage["headers"]): Buffer {
  const key = headerOf(headers, "x-api-key") ?? headerOf(headers, "authorization") ?? "";
  return createHash("sha256").update(key).digest();
}

function clientAddressOf(req: IncomingMessage): string {
  return normalizeAddress(req.socket.remoteAddress);
}

function refusalOf(error: unknown): { status: number; message: string } | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  if (error.code === Code.Unauthenticated) return { status: 401, message: error.rawMessage };
  if (error.code === Code.PermissionDenied) return { status: 403, message: error.rawMessage };
  if (error.code === Code.ResourceExhausted) return { status: 429, message: error.rawMessage };
  if (error.code === Code.Unavailable) return { status: 503, message: error.rawMessage };
  return undefined;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The JSON body of an initialize POST; answers 400/413 itself and resolves undefined then. */
async function readJson(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      jsonRpcError(res, 413, -32600, `the request body is over ${MAX_BODY_BYTES} bytes`);
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    jsonRpcError(res, 400, ErrorCode.ParseError, "the body is not JSON");
    return undefined;
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
