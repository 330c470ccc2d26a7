// The MCP server at /mcp on the agent front, driven by the SDK's own client over streamable HTTP:
// a session opens only with a key that lists tools (User) and stays bound to it; tools/list gives
// function names with their input schemas; tools/call goes through the dispatcher (Operator), C
// tools ask the client once per session through elicitation, X tools every call, a client without
// elicitation is denied unless Tools:Mcp:TrustClientConfirmation; every call is audited with
// source `mcp` and the MCP session.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import test from "ava";
import { call, startAgentsMesh } from "../support/agents-mesh.js";
import { until } from "../support/until.js";

const USER_KEY = "mcp-user-key-7d1e9b3c5a2f";
const OPERATOR_KEY = "mcp-operator-key-4b8e2d6f1a3c";
const authOn = [
  "--Gateway:Auth:Enabled=true",
  `--Gateway:Auth:ApiKeys=${JSON.stringify([
    { Key: USER_KEY, Name: "reader", Role: "User" },
    { Key: OPERATOR_KEY, Name: "ops", Role: "Operator" },
  ])}`,
];

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

/** An SDK client on /mcp; `answer` set: it declares elicitation and answers each ask with it. */
async function connect(base: string, key: string | undefined, answer?: (message: string) => boolean) {
  const client = new Client({ name: "meshwork-test", version: "1.0.0" }, { capabilities: answer ? { elicitation: {} } : {} });
  const asked: string[] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const message = request.params.message;
      asked.push(message);
      return { action: "accept", content: { approve: answer(message) } };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: key ? { "x-api-key": key } : {} },
  });
  await client.connect(transport);
  return { client, transport, asked };
}

const text = (result: Record<string, unknown>) => (result.content as { type: string; text: string }[]).map((part) => part.text).join("");

test.serial("keys: no key 401, User lists but cannot call, a session stays bound to its key", async (t) => {
  const { base } = await startAgentsMesh(t, authOn);
  const raw = (headers: Record<string, string>) =>
    fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(initialize),
    });
  const none = await raw({});
  t.is(none.status, 401);
  t.like(await none.json(), { jsonrpc: "2.0", error: { code: -32001 } });
  t.is((await raw({ "x-api-key": "wrong" })).status, 401);
  const noSession = await fetch(`${base}/mcp`, { method: "GET", headers: { "x-api-key": USER_KEY } });
  t.is(noSession.status, 400);
  t.is((await fetch(`${base}/mcp`, { method: "GET", headers: { "x-api-key": USER_KEY, "mcp-session-id": "nope" } })).status, 404);

  const { client, transport } = await connect(base, USER_KEY);
  t.teardown(() => client.close());
  const { tools } = await client.listTools();
  const think = tools.find((tool) => tool.name === "think");
  t.like(think, { name: "think", inputSchema: { type: "object", required: ["thought"] } });
  t.truthy(
    tools.find((tool) => tool.name === "rpc_tracking_v1_AssetService_GetAsset"),
    "mesh RPC tools by function name",
  );
  t.false(
    tools.some((tool) => tool.name.includes(".")),
    "function names only",
  );
  const refused = await t.throwsAsync(client.callTool({ name: "think", arguments: { thought: "hi" } }), { instanceOf: McpError });
  t.regex(refused?.message ?? "", /operator/i);

  // The session's id with another key: refused, nothing served.
  const other = await fetch(`${base}/mcp`, {
    method: "GET",
    headers: { "x-api-key": OPERATOR_KEY, "mcp-session-id": transport.sessionId!, accept: "text/event-stream" },
  });
  t.is(other.status, 401);
});

test.serial("calls: A runs, C asks once per session, X every call, denial and unknown names; audited as mcp", async (t) => {
  const { base } = await startAgentsMesh(t, authOn);
  let approve = true;
  const { client, transport, asked } = await connect(base, OPERATOR_KEY, () => approve);
  t.teardown(() => client.close());

  const thought = await client.callTool({ name: "think", arguments: { thought: "over MCP" } });
  t.is(text(thought), "Thought noted: over MCP");
  t.falsy(thought.isError);
  t.is(asked.length, 0, "an A tool asks nobody");

  const written = await client.callTool({ name: "write_file", arguments: { path: "mcp/note.txt", content: "from mcp" } });
  t.falsy(written.isError, text(written));
  t.is(asked.length, 1);
  t.regex(asked[0]!, /write_file \(tier C\)/);
  t.regex(asked[0]!, /\[REDACTED\]|mcp\/note\.txt/);
  await client.callTool({ name: "write_file", arguments: { path: "mcp/note.txt", content: "again" } });
  t.is(asked.length, 1, "a C tool confirmed once in the session is not asked again");
  t.regex(text(await client.callTool({ name: "read_file", arguments: { path: "mcp/note.txt" } })), /again/);

  const ran = await client.callTool({ name: "run_command", arguments: { command: "echo from-mcp" } });
  t.regex(text(ran), /from-mcp/);
  approve = false;
  const denied = await client.callTool({ name: "run_command", arguments: { command: "echo never" } });
  t.is(text(denied), "User denied tool execution.");
  t.true(denied.isError);
  t.is(asked.length, 3, "an X tool asks every call");

  const bad = await client.callTool({ name: "think", arguments: { thought: 5 } });
  t.true(bad.isError);
  t.regex(text(bad), /thought/);
  await t.throwsAsync(client.callTool({ name: "no_such_tool", arguments: {} }), {
    instanceOf: McpError,
    message: /unknown tool 'no_such_tool'/,
  });

  // A client without elicitation (and Tools:Mcp:TrustClientConfirmation off): C and X denied.
  const mute = await connect(base, OPERATOR_KEY);
  t.teardown(() => mute.client.close());
  const refusedWrite = await mute.client.callTool({ name: "write_file", arguments: { path: "never.txt", content: "no" } });
  t.true(refusedWrite.isError);
  t.is(text(refusedWrite), "User denied tool execution.");
  t.regex(text(await mute.client.callTool({ name: "read_file", arguments: { path: "never.txt" } })), /^Error: /, "nothing was written");

  // A second session of the same client key asks for the C tool again.
  const second = await connect(base, OPERATOR_KEY, () => true);
  t.teardown(() => second.client.close());
  await second.client.callTool({ name: "write_file", arguments: { path: "mcp/other.txt", content: "x" } });
  t.is(second.asked.length, 1);

  // One audit entry per call, source mcp, the MCP session as the policy session.
  const session = `mcp:${transport.sessionId}`;
  const events = await until(async () => {
    const answer = await fetch(`${base}/api/audit/events?action=tool.invoke&limit=100`, { headers: { "x-api-key": OPERATOR_KEY } });
    const all = ((await answer.json()) as { events: { action: string; sessionId: string | null }[] }).events.filter(
      (e) => e.action === "tool.invoke" && e.sessionId === session,
    );
    return all.length >= 8 && all;
  }, "the MCP session's tool.invoke audit entries");
  // biome-ignore lint/suspicious/noExplicitAny: audit details are free-form JSON
  const details = events.map((e: any) => ({ ...e.detail, policyResult: e.policyResult }));
  t.true(details.every((d) => d.source === "mcp"));
  t.is(details.filter((d) => d.policyResult === "user_denied").length, 1);
  t.is(details.filter((d) => d.canonical === "no_such_tool").length, 1, "an unknown name is audited too");
  t.is(events.length, 8, "nothing is audited for the asks themselves");
});

test.serial("Tools:Mcp:TrustClientConfirmation lets a client without elicitation run C tools", async (t) => {
  const { base } = await startAgentsMesh(t, ["--Tools:Mcp:TrustClientConfirmation=true"]);
  const { client } = await connect(base, undefined);
  t.teardown(() => client.close());
  const written = await client.callTool({ name: "write_file", arguments: { path: "trusted.txt", content: "ok" } });
  t.falsy(written.isError, text(written));
  t.is((await call(base, "POST", "/api/tools/read_file/invoke", { arguments: { path: "trusted.txt" } })).body.output.includes("ok"), true);
});
