// The /mcp route's limits, on a plain HTTP server over a ToolService answered in-process: an
// initialize body over 4 MiB is 413; sessions beyond the most allowed are 503 with Retry-After;
// a session idle past its limit is closed (its id then unknown, 404). Limits shrunk and the clock
// given by the test, so nothing waits for half an hour or opens a thousand sessions.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRouterTransport } from "@connectrpc/connect";
import test from "ava";
import { pino } from "pino";
import { ToolService } from "../../../gen/agents/v1/tool_pb.js";
import { until } from "../../../test/support/until.js";
import { type McpLimits, mcpRoute } from "./mcp-server.js";

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "limits", version: "1" } },
};

/** The route's log lines, parsed (it logs each session it closes at debug). */
type LogLine = { msg: string; mcpSession?: string };

async function serveRoute(t: { teardown(fn: () => unknown): void }, limits: Partial<McpLimits>, log: LogLine[] = []): Promise<string> {
  const transport = createRouterTransport((router) => router.service(ToolService, { listTools: () => ({ tools: [] }) }));
  const route = mcpRoute({
    transport,
    logger: pino({ level: "debug" }, { write: (line: string) => log.push(JSON.parse(line) as LogLine) }),
    approvalTimeoutSeconds: () => 60,
    trustClientConfirmation: () => false,
    version: "test",
    limits,
  });
  const server: Server = createServer((req, res) => route.handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(async () => {
    await route.close?.();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });

/** Opens a session; answers its id. */
async function open(url: string): Promise<string> {
  const res = await post(url, JSON.stringify(initialize));
  await res.body?.cancel();
  const id = res.headers.get("mcp-session-id");
  if (res.status !== 200 || !id) throw new Error(`initialize answered ${res.status}`);
  return id;
}

test("an initialize body over 4 MiB is 413, one just under is read", async (t) => {
  const url = await serveRoute(t, {});
  const padding = " ".repeat(4 * 1024 * 1024);
  const over = await post(url, `${JSON.stringify(initialize)}${padding}`);
  t.is(over.status, 413);
  t.like(await over.json(), { jsonrpc: "2.0", error: { code: -32600 } });
  const json = JSON.stringify(initialize);
  const under = await post(url, `${json}${" ".repeat(4 * 1024 * 1024 - json.length)}`);
  t.is(under.status, 200);
  t.truthy(under.headers.get("mcp-session-id"));
  await under.body?.cancel();
});

test("sessions beyond the most allowed are 503 with Retry-After; closing one makes room", async (t) => {
  const url = await serveRoute(t, { maxSessions: 2 });
  const first = await open(url);
  await open(url);
  const refused = await post(url, JSON.stringify(initialize));
  t.is(refused.status, 503);
  t.is(refused.headers.get("retry-after"), "5");
  t.like(await refused.json(), { error: { message: "too many MCP sessions (2); retry later" } });
  const closed = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": first } });
  t.is(closed.status, 200);
  t.truthy(await open(url));
});

test("a session idle past its limit is closed; one in use is kept", async (t) => {
  let now = 1_000_000;
  const log: LogLine[] = [];
  const url = await serveRoute(t, { sessionIdleMs: 30 * 60 * 1000, sweepIntervalMs: 10, now: () => now }, log);
  const idle = await open(url);
  now += 20 * 60 * 1000;
  const busy = await open(url);
  now += 11 * 60 * 1000;
  // idle was last seen 31 minutes ago, busy 11: the sweep closes idle only (a request would
  // refresh it, so the test waits for the close in the log before it asks).
  await until(() => log.some((line) => line.msg === "MCP session closed" && line.mcpSession === idle), "the idle session to be closed");
  const probe = (id: string) => fetch(url, { method: "GET", headers: { accept: "text/event-stream", "mcp-session-id": id } });
  const gone = await probe(idle);
  t.is(gone.status, 404);
  t.false(log.some((line) => line.msg === "MCP session closed" && line.mcpSession === busy));
  const kept = await probe(busy);
  t.is(kept.status, 200);
  await kept.body?.cancel();
});
