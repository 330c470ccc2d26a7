// Remote MCP tool servers against real MCP servers of the SDK (McpServer or the low-level Server,
// over StreamableHTTPServerTransport or SSEServerTransport) on 127.0.0.1, port 0, behind a
// node:http server that checks X-API-Key. Through the dispatcher: names, tier X, calls, errors,
// the key (setting or credential store), a refused key, a server that starts late or goes away,
// list_changed, paging, shutdown. Waits are on the family's events and the fake's own signals.
import { createHash, randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import test, { type ExecutionContext } from "ava";
import { z } from "zod";
import { ConfigError } from "../../../runtime/config/index.js";
import { CredentialStore } from "../../credentials/index.js";
import type { McpServerSettings } from "../../settings.js";
import { Dispatcher } from "../dispatch.js";
import { defaultToolsSettings, toolSettingsOf } from "../settings.js";
import { testToolContext } from "../testing.js";
import { call as callFront } from "../../../../test/support/agents-mesh.js";
import { startFakeOpenAi } from "../../../../test/support/fake-openai.js";
import { providerFlags } from "../../../../test/support/agents-mesh.js";
import { startTestMesh } from "../../../../test/support/start-mesh.js";
import { until } from "../../../../test/support/until.js";
import type { ConfirmQuestion, InvokeRequest, ToolSpec } from "../tool.js";
import { REMOTE_MCP_FAMILY, RemoteMcpTools } from "./index.js";

const KEY = "k-3f9a-remote-secret";

type Instance = McpServer | Server;

interface Fake {
  url: string;
  /** false: every connection is dropped at once (a server not up yet, or gone). */
  serving: boolean;
  instances: Instance[];
  /** Counters with a change event: `refused` (wrong key), `streams` (GET streams opened), `closed` (SSE streams ended). */
  count: Record<"refused" | "streams" | "closed", number>;
  changed: EventEmitter;
  /** Drops every connection and session. */
  stop(): void;
}

/** Resolves once `check()` holds, looking again (with the event's arguments) on every `event` of `emitter`. */
function whenEvent<A extends unknown[]>(emitter: EventEmitter, event: string, check: (...args: A | []) => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (check()) return resolve();
    const listener = (...args: unknown[]) => {
      if (!check(...(args as A))) return;
      emitter.off(event, listener);
      resolve();
    };
    emitter.on(event, listener);
  });
}

async function fakeServer(
  t: ExecutionContext,
  options: { transport: "streamable-http" | "sse"; make: () => Instance; key?: string; serving?: boolean },
): Promise<Fake> {
  const sessions = new Map<string, StreamableHTTPServerTransport | SSEServerTransport>();
  const changed = new EventEmitter();
  const fake: Fake = {
    url: "",
    serving: options.serving ?? true,
    instances: [],
    count: { refused: 0, streams: 0, closed: 0 },
    changed,
    stop() {
      fake.serving = false;
      sessions.clear();
      http.closeAllConnections();
    },
  };
  const bump = (name: keyof Fake["count"]) => {
    fake.count[name]++;
    changed.emit("change");
  };
  const connect = async (transport: StreamableHTTPServerTransport | SSEServerTransport) => {
    const instance = options.make();
    fake.instances.push(instance);
    await instance.connect(transport);
  };
  const http = createServer(async (req, res) => {
    if (!fake.serving) return req.socket.destroy();
    if (req.headers["x-api-key"] !== (options.key ?? KEY)) {
      bump("refused");
      return res.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized"}');
    }
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (options.transport === "sse") {
      if (req.method === "GET" && url.pathname === "/sse") {
        const transport = new SSEServerTransport("/messages", res);
        sessions.set(transport.sessionId, transport);
        res.on("close", () => bump("closed"));
        return connect(transport);
      }
      const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
      if (req.method !== "POST" || !(transport instanceof SSEServerTransport)) return res.writeHead(404).end();
      return transport.handlePostMessage(req, res);
    }
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (typeof id === "string" && !transport) return res.writeHead(404).end();
    if (!transport) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sid) => void sessions.set(sid, created),
      });
      transport = created;
      await connect(created);
    }
    if (req.method === "GET") signalHeaders(res, () => bump("streams"));
    await (transport as StreamableHTTPServerTransport).handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  fake.url = `http://127.0.0.1:${port}${options.transport === "sse" ? "/sse" : "/mcp"}`;
  t.teardown(async () => {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  return fake;
}

/** Calls `then` once the response's headers are written (the transport has registered its stream by then). */
function signalHeaders(res: ServerResponse, then: () => void): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const out = writeHead(...args);
    if (res.statusCode === 200) then();
    return out;
  }) as ServerResponse["writeHead"];
}

/** The tools every test server has. */
function toolbox(): McpServer {
  const server = new McpServer({ name: "toolbox", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes its text", inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async ({ text }) => ({
      content: [
        { type: "text", text: `echo: ${text}` },
        { type: "text", text: "done" },
      ],
    }),
  );
  server.registerTool("fail", { description: "Always fails" }, async () => ({
    isError: true,
    content: [{ type: "text", text: "the widget is broken" }],
  }));
  server.registerTool("picture", { description: "An image" }, async () => ({
    content: [
      { type: "text", text: "here:" },
      { type: "image", data: Buffer.from("0123456789").toString("base64"), mimeType: "image/png" },
    ],
  }));
  server.registerTool("leak", { description: "Answers with the key it was called with" }, async (extra) => ({
    content: [{ type: "text", text: `called with ${String(extra.requestInfo?.headers["x-api-key"])}` }],
  }));
  server.registerTool(
    "wait",
    { description: "Answers when cancelled" },
    async (extra) =>
      new Promise((resolve) =>
        extra.signal.addEventListener("abort", () => resolve({ content: [{ type: "text", text: "cancelled" }] }), { once: true }),
      ),
  );
  return server;
}

interface Log {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

const local: ToolSpec = {
  name: "read_file",
  description: "a local tool",
  tier: "A",
  parameters: { type: "object", properties: {} },
  async run() {
    return "local";
  },
};

async function gateway(
  t: ExecutionContext,
  servers: McpServerSettings[],
  options: { credentials?: CredentialStore; families?: ToolSpec[][] } = {},
) {
  const ctx = await testToolContext();
  const logs: Log[] = [];
  const log = (level: string) => (obj: unknown, msg?: string) => logs.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? "" });
  const logger = { info: log("info"), warn: log("warn"), error: log("error") };
  const dispatcher = new Dispatcher({
    settings: { ...toolSettingsOf(defaultToolsSettings(), ctx.settings.dataDir), workspaceRoot: ctx.workspace.root },
    services: ctx.services,
    families: options.families ?? [[local]],
    audit: () => {},
    logger,
  });
  const remote = new RemoteMcpTools({ servers, credentials: options.credentials, logger, backoff: { initialMs: 10, maxMs: 100 } });
  t.teardown(() => remote.close());
  const asked: ConfirmQuestion[] = [];
  const call = (name: string, args: InvokeRequest["arguments"] = {}) =>
    dispatcher.invoke({
      name,
      arguments: args,
      source: "agent",
      agentId: "a1",
      sessionId: "s1",
      confirm: async (question) => {
        asked.push(question);
        return true;
      },
    });
  const loaded = (server: string) => whenEvent(remote.events, "tools", (name?: string) => name === server);
  const unreachable = (server: string) => whenEvent(remote.events, "unreachable", (name?: string) => name === server);
  const start = () => remote.start((tools) => dispatcher.setFamily(REMOTE_MCP_FAMILY, tools));
  // No log line may carry the key, whatever the test does.
  t.teardown(() => {
    if (JSON.stringify(logs).includes(KEY)) throw new Error("a log line carries the API key");
  });
  return { dispatcher, remote, logs, asked, call, loaded, unreachable, start };
}

const server = (name: string, url: string, extra: Partial<McpServerSettings> = {}): McpServerSettings => ({
  name,
  endpoint: url,
  apiKey: KEY,
  ...extra,
});

test("streamable HTTP: tools are listed as mcp.<Name>.<tool>, tier X, and calls go through the dispatcher", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox });
  const gw = await gateway(t, [server("alpha", fake.url)]);
  const loaded = gw.loaded("alpha");
  gw.start();
  await loaded;

  const echo = gw.dispatcher.resolve("mcp_alpha_echo");
  t.like(echo, { name: "mcp.alpha.echo", functionName: "mcp_alpha_echo", tier: "X", description: "Echoes its text" });
  t.deepEqual(echo?.parameters.required, ["text"]);
  t.is(gw.dispatcher.resolve("mcp.alpha.echo"), echo);
  t.is(gw.dispatcher.tierOf("mcp.alpha.echo"), "X", "readOnlyHint does not lower the tier");
  t.deepEqual(
    gw.dispatcher
      .tools()
      .map((tool) => tool.name)
      .sort(),
    ["mcp.alpha.echo", "mcp.alpha.fail", "mcp.alpha.leak", "mcp.alpha.picture", "mcp.alpha.wait", "read_file"],
  );
  const definitions = await gw.dispatcher.definitions("a1");
  t.true(definitions.some((d) => d.function.name === "mcp_alpha_echo" && d.function.description === "Echoes its text"));
  t.is(await gw.dispatcher.decisionFor("mcp_alpha_echo", "a1", "s1"), "confirm");

  const ok = await gw.call("mcp_alpha_echo", '{"text":"hi"}');
  t.like(ok, { canonical: "mcp.alpha.echo", tier: "X", outcome: "ok", isError: false, output: "echo: hi\ndone" });
  t.like(gw.asked[0], { canonical: "mcp.alpha.echo", tier: "X" });

  const failed = await gw.call("mcp.alpha.fail");
  t.like(failed, { outcome: "ok", isError: true, output: "Error: the widget is broken" });

  const picture = await gw.call("mcp_alpha_picture");
  t.is(picture.output, "here:\n[image image/png, 10 bytes]");

  t.is((await gw.call("mcp_alpha_leak")).output, "called with [REDACTED]", "the key is scrubbed from answers");

  const missing = await gw.call("mcp_alpha_echo", {});
  t.is(missing.output, "Error: missing required argument 'text'");
  t.is(fake.count.refused, 0);
});

test("a call answers Error when the server does not answer within the envelope's timeoutMs", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox });
  const gw = await gateway(t, [server("alpha", fake.url)]);
  const loaded = gw.loaded("alpha");
  gw.start();
  await loaded;
  const slow = await gw.call("mcp_alpha_wait", { timeoutMs: 50 });
  t.true(slow.isError);
  t.regex(slow.output, /^Error: .*(timed out after 50 ms|did not answer 'wait' within 50 ms)/);
});

test("SSE transport (any case of the spelling): listed, called, and closed at shutdown", async (t) => {
  const fake = await fakeServer(t, { transport: "sse", make: toolbox });
  const gw = await gateway(t, [server("beta", fake.url, { transport: "SSE" })]);
  const loaded = gw.loaded("beta");
  gw.start();
  await loaded;
  t.like(gw.dispatcher.resolve("mcp_beta_echo"), { name: "mcp.beta.echo", tier: "X" });
  t.like(await gw.call("mcp_beta_echo", { text: "over sse" }), { isError: false, output: "echo: over sse\ndone" });
  t.like(await gw.call("mcp_beta_fail"), { isError: true, output: "Error: the widget is broken" });

  const closed = whenEvent(fake.changed, "change", () => fake.count.closed === 1);
  await gw.remote.close();
  await closed;
  t.deepEqual(gw.remote.status(), [{ name: "beta", state: "closed", tools: 5 }]);
});

test("a refused key: the tools stay absent and a warning names the server and says why, never the key", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox, key: "the-right-key" });
  const gw = await gateway(t, [server("gamma", fake.url)]);
  const down = gw.unreachable("gamma");
  gw.start();
  await down;
  t.true(fake.count.refused >= 1);
  t.false(gw.dispatcher.tools().some((tool) => tool.name.startsWith("mcp.")));
  const warning = gw.logs.find((log) => log.level === "warn" && log.obj.server === "gamma");
  t.truthy(warning);
  t.regex(String(warning?.obj.reason), /^HTTP 401 \(check MCP:Servers ApiKey or the credential mcp\.<Name>\)$/);
  t.like(gw.remote.status()[0], { name: "gamma", state: "unreachable", tools: 0 });
  t.is((await gw.call("mcp_gamma_echo", { text: "x" })).output, "Error: unknown tool 'mcp_gamma_echo'");
});

test("a server that starts later is picked up; one that goes away answers unreachable, then comes back", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox, serving: false });
  const gw = await gateway(t, [server("late", fake.url)]);
  const firstFailure = gw.unreachable("late");
  gw.start();
  await firstFailure;
  t.is(gw.dispatcher.resolve("mcp_late_echo"), undefined);
  const reason = gw.remote.status()[0]?.reason;
  t.truthy(reason);
  t.not(reason, "fetch failed", "the reason says why, from fetch's cause");
  t.true(gw.logs.some((log) => log.level === "warn" && log.obj.server === "late" && log.msg.includes("unreachable")));

  let loaded = gw.loaded("late");
  fake.serving = true;
  await loaded;
  t.like(await gw.call("mcp_late_echo", { text: "now" }), { isError: false, output: "echo: now\ndone" });

  // Gone: its stream drops, the tools stay listed and answer that the server is unreachable.
  await whenEvent(fake.changed, "change", () => fake.count.streams >= 1);
  const gone = gw.unreachable("late");
  fake.stop();
  await gone;
  const answer = await gw.call("mcp_late_echo", { text: "again" });
  t.true(answer.isError);
  t.regex(answer.output, /^Error: MCP server 'late' is unreachable: .+/);
  t.truthy(gw.dispatcher.resolve("mcp_late_echo"));

  loaded = gw.loaded("late");
  fake.serving = true;
  await loaded;
  t.like(await gw.call("mcp_late_echo", { text: "back" }), { isError: false, output: "echo: back\ndone" });
});

test("notifications/tools/list_changed lists the tools again", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox });
  const gw = await gateway(t, [server("delta", fake.url)]);
  let loaded = gw.loaded("delta");
  gw.start();
  await loaded;
  await whenEvent(fake.changed, "change", () => fake.count.streams >= 1);
  t.is(gw.dispatcher.resolve("mcp_delta_added"), undefined);

  loaded = gw.loaded("delta");
  for (const instance of fake.instances) {
    if (!(instance instanceof McpServer) || !instance.isConnected()) continue;
    instance.registerTool("added", { description: "Added later" }, async () => ({ content: [{ type: "text", text: "new tool" }] }));
  }
  await loaded;
  t.like(gw.dispatcher.resolve("mcp_delta_added"), { name: "mcp.delta.added", tier: "X", description: "Added later" });
  t.is((await gw.call("mcp_delta_added")).output, "new tool");
});

test("tools/list is followed through its cursors; a long name is shortened like the mesh RPC tools'", async (t) => {
  const longTool = "summarise_the_quarterly_report_for_the_board_of_directors";
  const paged = () => {
    const instance = new Server({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } });
    const tool = (name: string) => ({ name, description: `tool ${name}`, inputSchema: { type: "object" as const } });
    const pages: Record<string, { tools: ReturnType<typeof tool>[]; nextCursor?: string }> = {
      "": { tools: [tool("one")], nextCursor: "p2" },
      p2: { tools: [tool("two")], nextCursor: "p3" },
      p3: { tools: [tool(longTool)] },
    };
    instance.setRequestHandler(ListToolsRequestSchema, async (request) => pages[request.params?.cursor ?? ""]!);
    instance.setRequestHandler(CallToolRequestSchema, async (request) => ({
      content: [{ type: "text", text: `called ${request.params.name} with ${JSON.stringify(request.params.arguments)}` }],
    }));
    return instance;
  };
  const fake = await fakeServer(t, { transport: "streamable-http", make: paged });
  const name = "reporting.example-cluster";
  const gw = await gateway(t, [server(name, fake.url, { transport: "streamableHttp" })]);
  const loaded = gw.loaded(name);
  gw.start();
  await loaded;

  const canonical = `mcp.${name}.${longTool}`;
  const flat = canonical.replace(/[^A-Za-z0-9_-]/g, "_");
  t.true(flat.length > 64);
  const expected = `${flat.slice(0, 55)}_${createHash("sha256").update(flat).digest("hex").slice(0, 8)}`;
  const long = gw.dispatcher.resolve(canonical);
  t.like(long, { name: canonical, functionName: expected, tier: "X" });
  t.is(long?.functionName?.length, 64);
  t.like(gw.dispatcher.resolve("mcp_reporting_example-cluster_one"), { name: `mcp.${name}.one` });
  t.like(gw.dispatcher.resolve("mcp_reporting_example-cluster_two"), { name: `mcp.${name}.two` });
  t.is((await gw.call(expected, { any: 1 })).output, `called ${longTool} with {}`);
});

test("the key comes from the credential mcp.<Name> when MCP:Servers gives none", async (t) => {
  const fake = await fakeServer(t, { transport: "streamable-http", make: toolbox });
  const credentials = new CredentialStore({ dataDir: await mkdtemp(join(tmpdir(), "remote-mcp-")) });
  await credentials.set("mcp.stored", KEY);
  const gw = await gateway(t, [server("stored", fake.url, { apiKey: undefined }), server("keyless", fake.url, { apiKey: undefined })], {
    credentials,
  });
  const loaded = gw.loaded("stored");
  const keyless = whenEvent(
    gw.remote.events,
    "unreachable",
    (name?: string, reason?: string) => name === "keyless" && reason !== undefined,
  );
  gw.start();
  await Promise.all([loaded, keyless]);
  t.is((await gw.call("mcp_stored_echo", { text: "from the store" })).output, "echo: from the store\ndone");
  t.like(gw.remote.status()[1], {
    name: "keyless",
    state: "unreachable",
    reason: "no API key: set MCP:Servers ApiKey or the credential 'mcp.keyless'",
  });
  t.is(fake.count.refused, 0, "a server without a key is not even asked");
});

test("configuration: an unknown transport or a repeated name is a ConfigError naming the server", (t) => {
  const logger = { info: () => {}, warn: () => {} };
  const bad = t.throws(() => new RemoteMcpTools({ servers: [server("ws", "https://x.example/mcp", { transport: "websocket" })], logger }));
  t.true(bad instanceof ConfigError);
  t.regex(bad!.message, /MCP:Servers \(server "ws"\) Transport = "websocket": expected streamable-http/);
  for (const transport of ["http", "HTTP", "streamable-http", "streamableHttp", "sse", "Sse", undefined])
    t.notThrows(() => new RemoteMcpTools({ servers: [server("ok", "https://x.example/mcp", { transport })], logger }));
  const twice = t.throws(
    () => new RemoteMcpTools({ servers: [server("a", "https://x.example/mcp"), server("a", "https://y.example/mcp")], logger }),
  );
  t.true(twice instanceof ConfigError);
  t.regex(twice!.message, /two servers are named "a"/);
});

test("setFamily keeps the repeated-name check and changes nothing when it fails", async (t) => {
  const gw = await gateway(t, []);
  const tool = (name: string, functionName?: string): ToolSpec => ({ ...local, name, ...(functionName ? { functionName } : {}) });
  gw.dispatcher.setFamily("extra", [tool("mcp.x.a", "mcp_x_a")]);
  t.truthy(gw.dispatcher.resolve("mcp_x_a"));
  t.throws(() => gw.dispatcher.setFamily("other", [tool("mcp.y.b", "mcp_x_a")]), { message: "two tools are named mcp_x_a" });
  t.throws(() => gw.dispatcher.setFamily("extra", [tool("read_file")]), { message: "two tools are named read_file" });
  t.truthy(gw.dispatcher.resolve("mcp_x_a"), "the failed replacement left the family as it was");
  t.is(gw.dispatcher.resolve("mcp_y_b"), undefined);
  gw.dispatcher.setFamily("extra", []);
  t.is(gw.dispatcher.resolve("mcp_x_a"), undefined);
  t.deepEqual(
    gw.dispatcher.tools().map((x) => x.name),
    ["read_file"],
  );
});

test("wired into the agent gateway: the key from its credential store, GET /api/tools, invoke, closed at shutdown", async (t) => {
  const fake = await fakeServer(t, { transport: "sse", make: toolbox });
  const openai = await startFakeOpenAi();
  const dataDir = await mkdtemp(join(tmpdir(), "remote-mcp-mesh-"));
  await new CredentialStore({ dataDir }).set("mcp.remote", KEY);
  const flags = ["--MCP:Servers:0:Name=remote", `--MCP:Servers:0:Endpoint=${fake.url}`, "--MCP:Servers:0:Transport=sse"];
  const mesh = await startTestMesh({ flags: [...providerFlags(openai, dataDir), ...flags] });
  let running = true;
  const stop = async () => {
    if (running) await mesh.close();
    running = false;
  };
  t.teardown(async () => {
    await stop();
    await openai.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const base = mesh.frontUrl("agents");

  const listed = await until(async () => {
    const answer = await callFront(base, "GET", "/api/tools");
    return answer.body.tools.find((tool: { name: string }) => tool.name === "mcp.remote.echo");
  }, "mcp.remote.echo in GET /api/tools");
  t.like(listed, { name: "mcp.remote.echo", functionName: "mcp_remote_echo", tier: "X", description: "Echoes its text" });
  const unconfirmed = await callFront(base, "POST", "/api/tools/mcp_remote_echo/invoke", { arguments: { text: "x" } });
  t.like(unconfirmed.body, { outcome: "user_denied", tier: "X" });
  const ran = await callFront(base, "POST", "/api/tools/mcp.remote.echo/invoke", { arguments: { text: "e2e" }, confirm: true });
  t.like(ran.body, { canonical: "mcp.remote.echo", tier: "X", outcome: "ok", isError: false, output: "echo: e2e\ndone" });

  const closed = whenEvent(fake.changed, "change", () => fake.count.closed >= 1);
  await stop();
  await closed;
  t.is(fake.count.refused, 0);
});

test("an unknown MCP:Servers Transport stops the agent gateway's start-up naming the server", async (t) => {
  const openai = await startFakeOpenAi();
  const dataDir = await mkdtemp(join(tmpdir(), "remote-mcp-mesh-"));
  t.teardown(async () => {
    await openai.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const flags = ["--MCP:Servers:0:Name=odd", "--MCP:Servers:0:Endpoint=https://tools.example/mcp", "--MCP:Servers:0:Transport=grpc"];
  await t.throwsAsync(startTestMesh({ flags: [...providerFlags(openai, dataDir), ...flags] }), {
    instanceOf: ConfigError,
    message: /MCP:Servers \(server "odd"\) Transport = "grpc"/,
  });
});
