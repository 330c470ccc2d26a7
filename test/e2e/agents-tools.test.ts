import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { HttpTransportType, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import test from "ava";
import { ToolApprovalRequestedSchema } from "../../gen/agents/v1/events_pb.js";
import { watchBus } from "../support/event-watch.js";
import { loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { call, startAgentsMesh } from "../support/agents-mesh.js";
import type { FakeOpenAi } from "../support/fake-openai.js";
import { until } from "../support/until.js";

const setup = startAgentsMesh;

const toolCall = (id: string, name: string, args: unknown) => ({
  kind: "reply" as const,
  toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
  usage: { prompt_tokens: 10, completion_tokens: 3 },
});
const reply = (text: string) => ({ kind: "reply" as const, content: [text], usage: { prompt_tokens: 20, completion_tokens: 2 } });

/** The `tool` messages of the last request the fake got. */
function toolResults(fake: FakeOpenAi) {
  const last = fake.chatRequests().at(-1)!.body as { messages: { role: string; content: string }[] };
  return last.messages.filter((m) => m.role === "tool").map((m) => m.content);
}

test.serial("ToolService: list, invoke (404, 400, confirm for C), the tool policy API", async (t) => {
  const { base } = await setup(t);
  const listed = await call(base, "GET", "/api/tools");
  t.is(listed.status, 200);
  const think = listed.body.tools.find((tool: { name: string }) => tool.name === "think");
  t.like(think, { name: "think", functionName: "think", tier: "A", parameters: { type: "object", required: ["thought"] } });

  const ok = await call(base, "POST", "/api/tools/think/invoke", { arguments: { thought: "hi" } });
  t.is(ok.status, 200, JSON.stringify(ok.body));
  t.like(ok.body, { name: "think", canonical: "think", tier: "A", outcome: "ok", output: "Thought noted: hi" });
  t.is((await call(base, "POST", "/api/tools/nope/invoke", { arguments: {} })).status, 404);
  const invalid = await call(base, "POST", "/api/tools/think/invoke", { arguments: { thought: 3 } });
  t.is(invalid.status, 400);
  t.regex(invalid.body.message, /argument 'thought' must be a string/);

  const agent = (await call(base, "POST", "/api/agents", {})).body;
  const denied = await call(base, "POST", "/api/tools/reset_usage/invoke", { arguments: {}, agentId: agent.id });
  t.like(denied.body, { outcome: "user_denied", output: "User denied tool execution.", isError: true });
  const confirmed = await call(base, "POST", "/api/tools/reset_usage/invoke", { arguments: {}, agentId: agent.id, confirm: true });
  t.like(confirmed.body, { canonical: "reset_usage", tier: "C", outcome: "ok", output: "Usage counters reset." });
  t.is(
    (await call(base, "POST", "/api/tools/think/invoke", { arguments: { thought: "x" }, agentId: "00000000-0000-4000-8000-000000000000" }))
      .status,
    404,
  );

  t.deepEqual((await call(base, "GET", `/api/agents/${agent.id}/tool-policy`)).body, { approvalMode: "prompt", allow: [], deny: [] });
  const put = await call(base, "PUT", `/api/agents/${agent.id}/tool-policy`, { approvalMode: "auto", allow: ["x*"], deny: ["get_*"] });
  t.is(put.status, 200, JSON.stringify(put.body));
  t.deepEqual(put.body, { approvalMode: "auto", allow: ["x*"], deny: ["get_*"] });
  t.is((await call(base, "PUT", `/api/agents/${agent.id}/tool-policy`, { approvalMode: "sometimes" })).status, 400);
  t.is((await call(base, "GET", "/api/agents/00000000-0000-4000-8000-000000000000/tool-policy")).status, 404);
  const blocked = await call(base, "POST", "/api/tools/get_usage/invoke", { arguments: {}, agentId: agent.id });
  t.like(blocked.body, { outcome: "denied", output: "Tool blocked: 'get_usage' is denied by the agent's tool policy (get_*)." });
});

test.serial(
  "a turn's C tool waits as a pending approval decided over REST; the denied tools are not offered; /autorun; deny mode; get_usage",
  async (t) => {
    const { base, fake, mesh } = await setup(t);
    const events = await watchBus(mesh, "agents.v1.tool.>", "AGENTS");
    t.teardown(() => events.stop());
    const agent = (await call(base, "POST", "/api/agents", {})).body;
    await call(base, "PUT", `/api/agents/${agent.id}/tool-policy`, { deny: ["spawn_*"] });

    fake.script.push(toolCall("c1", "reset_usage", {}), reply("reset done"));
    const turn = call(base, "POST", `/api/agents/${agent.id}/message`, { message: "reset please" });
    const pending = await until(async () => {
      const listed = await call(base, "GET", `/api/agents/${agent.id}/approvals`);
      return listed.body?.length === 1 && listed.body;
    }, "a pending approval");
    t.like(pending[0], { kind: "tool", tool: "reset_usage", canonical: "reset_usage", tier: "C", arguments: {} });
    t.true(Date.parse(pending[0].expiresAt) > Date.now());
    const offered = (fake.chatRequests().at(-1)!.body as { tools: { function: { name: string } }[] }).tools.map((d) => d.function.name);
    t.false(offered.includes("spawn_agent"));
    t.true(offered.includes("reset_usage"));

    const approvals = `/api/agents/${agent.id}/approvals`;
    t.is((await call(base, "POST", `${approvals}/${pending[0].id}`, { decision: "maybe" })).status, 400);
    t.is((await call(base, "POST", `${approvals}/00000000-0000-4000-8000-000000000000`, { decision: "approve" })).status, 404);
    const decided = await call(base, "POST", `${approvals}/${pending[0].id}`, { decision: "approve" });
    t.is(decided.status, 200, JSON.stringify(decided.body));
    t.is((await call(base, "POST", `${approvals}/${pending[0].id}`, { decision: "deny" })).status, 409);
    const done = await turn;
    t.is(done.status, 200, JSON.stringify(done.body));
    t.is(done.body.response, "reset done");
    t.deepEqual(toolResults(fake), ["Usage counters reset."]);
    const requested = await until(() => events.seen.length > 0 && events.seen, "tool.approval_requested");
    t.like(fromBinary(ToolApprovalRequestedSchema, requested[0]!.data), {
      agentId: agent.id,
      approvalId: pending[0].id,
      kind: "tool",
      tool: "reset_usage",
      tier: "C",
    });

    // Remembered for the session: the next call runs without asking.
    fake.script.push(toolCall("c2", "reset_usage", {}), reply("again"));
    t.is((await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "again" })).body.response, "again");
    t.deepEqual(toolResults(fake), ["Usage counters reset."]);

    // get_usage counts what the provider reported on the turns since.
    fake.script.push(toolCall("u1", "get_usage", {}), reply("usage read"));
    await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "usage?" });
    const usage = JSON.parse(toolResults(fake)[0]!);
    t.like(usage, { promptTokens: 30, completionTokens: 5, totalTokens: 35, toolCalls: 1, turns: 1 });
    t.deepEqual(
      usage.costEstimates.map((c: { tier: string }) => c.tier),
      ["economy", "standard", "premium"],
    );

    // /autorun and /permissions are answered without the provider.
    const before = fake.chatRequests().length;
    const autorun = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "/autorun" });
    t.is(autorun.status, 200);
    t.regex(autorun.body.response, /^Autorun on/);
    t.regex((await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "/autorun off" })).body.response, /^Autorun off/);
    t.regex(
      (await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "/permissions off" })).body.response,
      /^Permissions off/,
    );
    t.is((await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "/permissions maybe" })).status, 400);
    t.is(fake.chatRequests().length, before);
    // Permissions off: the agent's deny list is lifted, so spawn_agent is offered again.
    fake.script.push(reply("ok"));
    await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "hi" });
    t.true(
      (fake.chatRequests().at(-1)!.body as { tools: { function: { name: string } }[] }).tools.some(
        (d) => d.function.name === "spawn_agent",
      ),
    );
    await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "/permissions on" });

    // Deny mode refuses C at once.
    const other = (await call(base, "POST", "/api/agents", {})).body;
    await call(base, "PUT", `/api/agents/${other.id}/tool-policy`, { approvalMode: "deny" });
    fake.script.push(toolCall("d1", "reset_usage", {}), reply("refused"));
    await call(base, "POST", `/api/agents/${other.id}/message`, { message: "reset" });
    t.deepEqual(toolResults(fake), ["Blocked by policy: reset_usage needs confirmation and approvals are off"]);
  },
);

test.serial("no decision within Tools:Approval:TimeoutSeconds: `User denied tool execution.`, and a late decision is 409", async (t) => {
  const { base, fake } = await setup(t, ["--Tools:Approval:TimeoutSeconds=1"]);
  const agent = (await call(base, "POST", "/api/agents", {})).body;
  fake.script.push(toolCall("c1", "reset_usage", {}), reply("gave up"));
  const turn = call(base, "POST", `/api/agents/${agent.id}/message`, { message: "reset" });
  const pending = await until(async () => {
    const listed = await call(base, "GET", `/api/agents/${agent.id}/approvals`);
    return listed.body?.length === 1 && listed.body;
  }, "a pending approval");
  t.is((await turn).body.response, "gave up");
  t.deepEqual(toolResults(fake), ["User denied tool execution."]);
  t.is((await call(base, "POST", `/api/agents/${agent.id}/approvals/${pending[0].id}`, { decision: "approve" })).status, 409);
  t.deepEqual((await call(base, "GET", `/api/agents/${agent.id}/approvals`)).body, []);
});

test.serial("a turn on /hubs/agent asks the client: ConfirmTool's result approves or denies", async (t) => {
  const { base, fake } = await setup(t);
  const agent = (await call(base, "POST", "/api/agents", {})).body;
  const connection = new HubConnectionBuilder()
    .withUrl(`${base}/hubs/agent`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  const asked: Record<string, unknown>[] = [];
  const answers = ["deny", "approve"];
  connection.on("ConfirmTool", (question: Record<string, unknown>) => {
    asked.push(question);
    return answers.shift();
  });
  await connection.start();
  t.teardown(() => connection.stop());
  const chat = (message: string) =>
    new Promise<{ type: string; content: string }[]>((resolve, reject) => {
      const items: { type: string; content: string }[] = [];
      connection
        .stream("StreamChat", agent.id, message)
        .subscribe({ next: (i) => items.push(i as never), complete: () => resolve(items), error: reject });
    });

  fake.script.push(toolCall("h1", "reset_usage", {}), reply("denied then"));
  t.is((await chat("reset")).at(-1)!.content, "denied then");
  t.deepEqual(toolResults(fake), ["User denied tool execution."]);
  t.like(asked[0], { agentId: agent.id, tool: "reset_usage", canonical: "reset_usage", tier: "C", arguments: {} });
  t.regex(String(asked[0]!.approvalId), /^[0-9a-f-]{36}$/);

  fake.script.push(toolCall("h2", "reset_usage", {}), reply("approved then"));
  t.is((await chat("reset")).at(-1)!.content, "approved then");
  t.deepEqual(toolResults(fake), ["Usage counters reset."]);
  t.is(asked.length, 2);
  // Nothing waited as a pending approval.
  t.deepEqual((await call(base, "GET", `/api/agents/${agent.id}/approvals`)).body, []);
});

test.serial("ask_questions waits as a `questions` item answered with { answers } or cancelled", async (t) => {
  const { base, fake } = await setup(t);
  const agent = (await call(base, "POST", "/api/agents", {})).body;
  const questionsJson = JSON.stringify({
    title: "Deploy",
    questions: [{ key: "env", prompt: "Where?", type: "singleSelect", options: ["staging", "prod"] }],
  });
  const pendingItem = () =>
    until(async () => {
      const listed = await call(base, "GET", `/api/agents/${agent.id}/approvals`);
      return listed.body?.length === 1 && listed.body[0];
    }, "a pending questions item");

  fake.script.push(toolCall("q1", "ask_questions", { questionsJson }), reply("thanks"));
  const turn = call(base, "POST", `/api/agents/${agent.id}/message`, { message: "deploy" });
  const item = await pendingItem();
  t.like(item, { kind: "questions", tool: "ask_questions", tier: "A", arguments: { title: "Deploy", questions: [{ key: "env" }] } });
  const path = `/api/agents/${agent.id}/approvals/${item.id}`;
  t.is((await call(base, "POST", path, { decision: "approve" })).status, 400);
  const answered = await call(base, "POST", path, { answers: { env: "staging" } });
  t.is(answered.status, 200, JSON.stringify(answered.body));
  t.is(answered.body.decision, "answered");
  t.is((await turn).body.response, "thanks");
  t.deepEqual(JSON.parse(toolResults(fake)[0]!), { status: "answered", answers: { env: "staging" } });

  fake.script.push(toolCall("q2", "ask_questions", { questionsJson }), reply("ok"));
  const second = call(base, "POST", `/api/agents/${agent.id}/message`, { message: "again" });
  const next = await pendingItem();
  t.is((await call(base, "POST", `/api/agents/${agent.id}/approvals/${next.id}`, { decision: "cancel" })).status, 200);
  await second;
  t.deepEqual(JSON.parse(toolResults(fake)[0]!), { status: "cancelled", answers: {} });

  fake.script.push(toolCall("q3", "ask_questions", { questionsJson: "{" }), reply("bad"));
  await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "bad" });
  t.deepEqual(toolResults(fake), ["Error: questionsJson is not valid JSON"]);
});

test.serial("ToolService through @grpc/grpc-js: ListTools, InvokeTool, NOT_FOUND and INVALID_ARGUMENT", async (t) => {
  const { mesh } = await setup(t);
  const pkg = loadGrpcPackage(["agents/v1/tool.proto"]);
  const client = new pkg.agents.v1.ToolService(`127.0.0.1:${mesh.servicePort}`, grpc.credentials.createInsecure()) as grpc.Client;
  t.teardown(() => client.close());
  const listed = await unaryCall<{ tools: { name: string; tier: string; functionName: string }[] }>(client, "ListTools", {});
  t.like(
    listed.tools.find((tool) => tool.name === "reset_usage"),
    { functionName: "reset_usage", tier: "C" },
  );
  const invoked = await unaryCall<{ canonical: string; outcome: string; output: string }>(client, "InvokeTool", {
    name: "think",
    arguments: { fields: { thought: { stringValue: "over gRPC" } } },
  });
  t.like(invoked, { canonical: "think", outcome: "ok", output: "Thought noted: over gRPC" });
  const unknown = await t.throwsAsync(unaryCall(client, "InvokeTool", { name: "nope" }));
  t.is((unknown as grpc.ServiceError).code, grpc.status.NOT_FOUND);
  const invalid = await t.throwsAsync(
    unaryCall(client, "InvokeTool", { name: "think", arguments: { fields: { thought: { numberValue: 3 } } } }),
  );
  t.is((invalid as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);
});
