// The agent gateway's agents, sessions, providers and turns, end to end through the agent front's
// REST (fetch) against loopback OpenAI-compatible fakes, and StreamChat over Connect.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import test, { type ExecutionContext } from "ava";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { SpanStatusCode } from "@opentelemetry/api";
import { AgentService, type ChatEvent } from "../../gen/agents/v1/agent_pb.js";
import { AgentSpawnedSchema, AgentStoppedSchema, AgentTurnCompletedSchema } from "../../gen/agents/v1/events_pb.js";
import { agentsWiring } from "../../services/agents/index.js";
import type { AuditEntry } from "../../services/agents/audit/types.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { ConfigError } from "../../services/runtime/config/index.js";
import { watchBus } from "../support/event-watch.js";
import { CredentialStore } from "../../services/agents/credentials/index.js";
import { call, providerFlags, startAgentsMesh } from "../support/agents-mesh.js";
import { startFakeOpenAi } from "../support/fake-openai.js";
import { type FakeTokenExchange, startFakeTokenExchange } from "../support/fake-token-exchange.js";
import { realServers } from "../support/real-infra.js";
import { startTestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

// The module's AuditLog, recording (the audit ring is another part of issue 14).
const audited: AuditEntry[] = [];
agentsWiring.audit = {
  async record(_em, entry) {
    audited.push(entry);
  },
};

/** The gateway's spans and meters, captured in memory for the meshes started while it is installed. */
function captureTelemetry(t: ExecutionContext) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  class Reader extends MetricReader {
    protected override async onForceFlush() {}
    protected override async onShutdown() {}
  }
  const reader = new Reader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  agentsWiring.telemetry = { tracerProvider, meterProvider };
  t.teardown(() => {
    agentsWiring.telemetry = undefined;
  });
  return {
    spans: (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name),
    /** Data points of an instrument: attributes and value (a sum, or a histogram's count). */
    async points(name: string) {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === name);
      return (metric?.dataPoints ?? []).map((point) => ({
        unit: metric!.descriptor.unit,
        attributes: point.attributes,
        value: typeof point.value === "number" ? point.value : (point.value as { count: number }).count,
      }));
    },
  };
}

const setup = startAgentsMesh;

// Agent events only: the stream also carries channel and update events (on a shared NATS server,
// other suites' too), which these schemas do not read.
const decode = (seen: BusMessage[]) =>
  seen
    .filter((m) => m.subject.startsWith("agents.v1.agent."))
    .map((m) => {
      const schema = m.subject.endsWith("spawned")
        ? AgentSpawnedSchema
        : m.subject.endsWith("stopped")
          ? AgentStoppedSchema
          : AgentTurnCompletedSchema;
      return { subject: m.subject, event: fromBinary(schema, m.data) as unknown as Record<string, unknown> };
    });

test.serial("providers, spawning (defaults, choices, refusals, the concurrency limit), get, list and stop", async (t) => {
  const backup = await startFakeOpenAi({ models: ["backup-model"] });
  t.teardown(() => backup.close());
  const { base, mesh } = await setup(t, [
    "--Gateway:Agents:MaxConcurrentAgents=3",
    "--Gateway:Agents:DefaultProvider=backup",
    "--Gateway:Agents:DefaultModel=gpt-4o",
    `--Providers:backup:BaseUrl=${backup.url}`,
    `--Providers:backup:ApiKey=${backup.apiKey}`,
    "--Providers:backup:Models=backup-model",
    "--Providers:backup:Priority=200",
  ]);
  const events = await watchBus(mesh, "agents.v1.>", "AGENTS");
  t.teardown(() => events.stop());

  const providers = await call(base, "GET", "/api/providers");
  t.is(providers.status, 200);
  t.deepEqual(providers.body, [
    { name: "fake", kind: "openai", models: ["gpt-4o-mini", "gpt-4o"], available: true, isDefault: false },
    { name: "backup", kind: "openai", models: ["backup-model"], available: true, isDefault: true },
  ]);
  t.deepEqual((await call(base, "GET", "/api/v1/providers")).body, providers.body);

  // No body at all: DefaultProvider, whose models do not include DefaultModel: its first.
  const plain = await fetch(`${base}/api/agents`, { method: "POST" });
  t.is(plain.status, 201);
  const first = (await plain.json()) as Record<string, unknown>;
  t.like(first, { provider: "backup", model: "backup-model", turnCount: 0, state: "Active" });
  t.regex(String(first.id), /^[0-9a-f-]{36}$/);
  t.is(plain.headers.get("location"), `/api/agents/${first.id}`);
  t.is(first.lastActivityAt, first.createdAt);

  const chosen = await call(base, "POST", "/api/v1/agents", { provider: "fake", model: "gpt-4o-mini", systemPrompt: "x" });
  t.is(chosen.status, 201);
  t.like(chosen.body, { provider: "fake", model: "gpt-4o-mini" });
  // A provider without a model: DefaultModel, which it lists.
  const second = await call(base, "POST", "/api/agents", { provider: "fake" });
  t.like(second.body, { provider: "fake", model: "gpt-4o" });

  const unknownProvider = await call(base, "POST", "/api/agents", { provider: "nope" });
  t.is(unknownProvider.status, 400);
  t.regex(unknownProvider.body.message, /unknown provider 'nope'/);
  const unlisted = await call(base, "POST", "/api/agents", { provider: "backup", model: "gpt-4o" });
  t.is(unlisted.status, 400);
  t.regex(unlisted.body.message, /does not list model 'gpt-4o'/);
  const unknownProperty = await call(base, "POST", "/api/agents", { provider: "fake", temperature: 2 });
  t.is(unknownProperty.status, 400);
  t.regex(JSON.stringify(unknownProperty.body), /temperature/);

  const full = await call(base, "POST", "/api/agents", {});
  t.is(full.status, 429);
  t.regex(full.body.message, /MaxConcurrentAgents/);

  const list = await call(base, "GET", "/api/agents");
  t.is(list.status, 200);
  t.deepEqual(
    list.body.map((a: { id: string }) => a.id),
    [first.id, chosen.body.id, second.body.id],
  );
  for (const agent of list.body) {
    t.deepEqual(Object.keys(agent).sort(), ["createdAt", "id", "lastActivityAt", "model", "provider", "sessionId", "state", "turnCount"]);
  }
  t.deepEqual((await call(base, "GET", `/api/agents/${first.id}`)).body, list.body[0]);
  t.is((await call(base, "GET", "/api/agents/not-a-uuid")).status, 400);
  const missing = await call(base, "GET", "/api/agents/00000000-0000-4000-8000-000000000000");
  t.is(missing.status, 404);
  t.regex(missing.body.message, /no agent 00000000-0000-4000-8000-000000000000/);

  const stop = await fetch(`${base}/api/agents/${first.id}`, { method: "DELETE" });
  t.is(stop.status, 204);
  t.is(await stop.text(), "");
  t.is((await call(base, "GET", `/api/agents/${first.id}`)).status, 404);
  t.is((await call(base, "DELETE", `/api/agents/${first.id}`)).status, 404);
  // A place is free again.
  t.is((await call(base, "POST", "/api/agents", {})).status, 201);

  const session = await call(base, "GET", `/api/sessions/${first.sessionId}`);
  t.is(session.status, 200);
  t.like(session.body, { id: first.sessionId, agentId: first.id, provider: "backup", model: "backup-model", turnCount: 0, turns: [] });
  t.truthy(session.body.closedAt, "stopping closes the session");
  const sessions = await call(base, "GET", "/api/v1/sessions");
  t.is(sessions.body.length, 4);
  t.is(sessions.body.find((s: { id: string }) => s.id === chosen.body.sessionId).closedAt, null, "an open session has closedAt null");
  t.is((await call(base, "GET", "/api/sessions/00000000-0000-4000-8000-000000000000")).status, 404);
  t.is((await call(base, "GET", "/api/sessions/zzz")).status, 400);

  await mesh.drainOutbox();
  const seen = await until(() => {
    const all = decode(events.seen);
    return (
      all.some((e) => e.subject === "agents.v1.agent.stopped") &&
      all.filter((e) => e.subject === "agents.v1.agent.spawned").length === 4 &&
      all
    );
  }, "the spawned and stopped events");
  t.like(seen.find((e) => e.subject === "agents.v1.agent.stopped")!.event, { agentId: first.id, reason: "requested" });
  t.like(seen.find((e) => e.subject === "agents.v1.agent.spawned")!.event, {
    agentId: first.id,
    provider: "backup",
    model: "backup-model",
  });
  const about = (id: unknown) => audited.filter((e) => e.resource === id || e.detail?.agentId === id).map((e) => e.action);
  t.deepEqual(about(first.id), ["agent.spawn", "session.create", "agent.stop", "session.close"]);
  t.like(
    audited.find((e) => e.action === "session.close" && e.sessionId === first.sessionId),
    { severity: "info", resource: first.sessionId as string, detail: { agentId: first.id, reason: "requested" } },
  );
});

test.serial("a turn: history, the tool-call loop with fragmented parallel calls, usage summed, the session's turns", async (t) => {
  const telemetry = captureTelemetry(t);
  const { base, fake, mesh } = await setup(t, ["--AgentGateway:MaxToolRounds=2"]);
  const events = await watchBus(mesh, "agents.v1.>", "AGENTS");
  t.teardown(() => events.stop());
  const agent = (await call(base, "POST", "/api/agents", { systemPrompt: "Be brief." })).body;

  t.is((await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "" })).status, 400);
  t.is((await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "  " })).status, 400);
  t.is((await call(base, "POST", "/api/agents/00000000-0000-4000-8000-000000000000/message", { message: "hi" })).status, 404);

  const first = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "Hi" });
  t.is(first.status, 200, JSON.stringify(first.body));
  t.deepEqual(first.body, {
    response: "Hello from the fake.",
    turnIndex: 0,
    provider: "fake",
    model: "gpt-4o-mini",
    usage: { promptTokens: 17, completionTokens: 5, totalTokens: 22 },
  });
  const sent = fake.chatRequests()[0]!;
  t.is(sent.headers.authorization, `Bearer ${fake.apiKey}`);
  const body = sent.body as { stream: boolean; model: string; messages: unknown[]; tools: { function: { name: string } }[] };
  t.true(body.stream);
  t.is(body.model, "gpt-4o-mini");
  t.deepEqual(body.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
  ]);
  // The whole catalogue under the agent's (default) policy; aliases are not advertised.
  const offered = body.tools.map((tool) => tool.function.name);
  t.true(offered.includes("think") && offered.includes("get_usage") && offered.includes("spawn_agent"));
  t.false(offered.includes("bash") || offered.includes("todo_write"));

  // Two calls in one reply, their fragments interleaved; then the answer.
  fake.script.push(
    {
      kind: "reply",
      toolCalls: [
        { id: "call_a", name: "think", arguments: JSON.stringify({ thought: "plan the answer" }) },
        { id: "call_b", name: "rm_rf", arguments: JSON.stringify({ path: "/", token: "sekrit" }) },
      ],
      interleave: true,
      fragment: 3,
      usage: { prompt_tokens: 10, completion_tokens: 4 },
    },
    { kind: "reply", content: ["Done", "."], usage: { prompt_tokens: 30, completion_tokens: 2 } },
  );
  const second = await call(base, "POST", `/api/v1/agents/${agent.id}/message`, { message: "Do it" });
  t.is(second.status, 200, JSON.stringify(second.body));
  t.like(second.body, { response: "Done.", turnIndex: 1, usage: { promptTokens: 40, completionTokens: 6, totalTokens: 46 } });
  const [toolRound, answerRound] = fake.chatRequests().slice(1);
  t.deepEqual((toolRound!.body as { messages: unknown[] }).messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello from the fake." },
    { role: "user", content: "Do it" },
  ]);
  const answerMessages = (answerRound!.body as { messages: Record<string, unknown>[] }).messages;
  t.like(answerMessages[4], {
    role: "assistant",
    tool_calls: [
      { id: "call_a", type: "function", function: { name: "think", arguments: '{"thought":"plan the answer"}' } },
      { id: "call_b", type: "function", function: { name: "rm_rf", arguments: '{"path":"/","token":"sekrit"}' } },
    ],
  });
  t.deepEqual(answerMessages.slice(5), [
    { role: "tool", content: "Thought noted: plan the answer", tool_call_id: "call_a" },
    { role: "tool", content: "Error: unknown tool 'rm_rf'", tool_call_id: "call_b" },
  ]);

  // The model never stops calling tools: MaxToolRounds (2) rounds run, the third reply is the answer.
  const loop = { kind: "reply" as const, content: ["still thinking"], toolCalls: [{ name: "think", arguments: '{"thought":"again"}' }] };
  fake.script.push(loop, loop, loop, loop);
  const before = fake.chatRequests().length;
  const third = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "Loop" });
  t.is(third.status, 200);
  t.is(third.body.response, "still thinking");
  t.is(fake.chatRequests().length - before, 3, "two tool rounds, then the answer");
  fake.script.length = 0;

  const session = (await call(base, "GET", `/api/sessions/${agent.sessionId}`)).body;
  t.is(session.turnCount, 3);
  t.is(session.closedAt, null);
  t.deepEqual(
    session.turns.map((turn: { index: number; message: string; response: string }) => [turn.index, turn.message, turn.response]),
    [
      [0, "Hi", "Hello from the fake."],
      [1, "Do it", "Done."],
      [2, "Loop", "still thinking"],
    ],
  );
  t.like(session.turns[1], { provider: "fake", model: "gpt-4o-mini", promptTokens: 40, completionTokens: 6 });
  t.true(session.turns[1].durationMs >= 0);
  t.deepEqual(session.turns[1].toolCalls, [
    { id: "call_a", name: "think", arguments: '{"thought":"plan the answer"}', result: "Thought noted: plan the answer", outcome: "ok" },
    { id: "call_b", name: "rm_rf", arguments: '{"path":"/","token":"sekrit"}', result: "Error: unknown tool 'rm_rf'", outcome: "denied" },
  ]);
  t.is(session.turns[2].toolCalls.length, 2);
  const invocations = audited.filter((e) => e.action === "tool.invoke" && e.sessionId === agent.sessionId);
  t.is(invocations.length, 4);
  t.like(invocations[0], {
    action: "tool.invoke",
    severity: "info",
    resource: "think",
    sessionId: agent.sessionId,
    policyResult: "ok",
    detail: { status: "completed", alias: "think", canonical: "think", tier: "A", source: "agent", failed: false },
  });
  t.deepEqual(invocations[0]!.detail!.arguments, { thought: "[REDACTED]" });
  t.like(invocations[1], {
    action: "tool.invoke",
    severity: "warning",
    resource: "rm_rf",
    sessionId: agent.sessionId,
    policyResult: "denied",
    detail: { status: "unknown_tool", alias: "rm_rf", canonical: "rm_rf", tier: "X", source: "agent", failed: true },
  });
  t.deepEqual(invocations[1]!.detail!.arguments, { path: "/", token: "[REDACTED]" });
  t.like((await call(base, "GET", `/api/agents/${agent.id}`)).body, { turnCount: 3, state: "Active" });

  const turns = telemetry.spans("app.agent.turn");
  t.is(turns.length, 3);
  t.like(turns[1]!.attributes, {
    "gen_ai.system": "fake",
    "gen_ai.request.model": "gpt-4o-mini",
    "app.turn.index": 1,
    "app.agent.turn_count": 1,
    "app.agent.id": agent.id,
    "gen_ai.operation.name": "chat",
  });
  t.is(turns[1]!.status.code, SpanStatusCode.OK);
  const calls = telemetry.spans("app.provider.chat_completion");
  t.is(calls.length, 1 + 2 + 3);
  t.true(
    calls.every(
      (span) =>
        span.parentSpanContext?.spanId !== undefined && turns.some((turn) => turn.spanContext().spanId === span.parentSpanContext?.spanId),
    ),
  );
  t.deepEqual(
    telemetry
      .spans("app.tool.invoke")
      .slice(0, 2)
      .map((span) => span.attributes["gen_ai.tool.name"]),
    ["think", "rm_rf"],
  );
  t.deepEqual(await telemetry.points("app.agent.turns"), [{ unit: "turns", attributes: { "gen_ai.system": "fake" }, value: 3 }]);
  t.deepEqual(await telemetry.points("app.agent.turn_duration"), [{ unit: "ms", attributes: { "gen_ai.system": "fake" }, value: 3 }]);
  const tokens = await telemetry.points("app.tokens.total");
  t.is(tokens[0]!.value, 22 + 46 + session.turns[2].promptTokens + session.turns[2].completionTokens);
  t.deepEqual((await telemetry.points("app.tools.invocations")).map((p) => [p.attributes["gen_ai.tool.name"], p.value]).sort(), [
    ["rm_rf", 1],
    ["think", 3],
  ]);
  t.deepEqual(await telemetry.points("app.providers.errors"), []);

  await mesh.drainOutbox();
  const completed = await until(() => {
    const all = decode(events.seen).filter((e) => e.subject === "agents.v1.agent.turn_completed");
    return all.length === 3 && all;
  }, "three turn_completed events");
  t.like(completed[1]!.event, { agentId: agent.id, turnIndex: 1, promptTokens: 40n, completionTokens: 6n });
});

test.serial(
  "a running turn refuses another (409); past TurnTimeout 504 with the provider request aborted; fallback; all providers down 503",
  async (t) => {
    const backup = await startFakeOpenAi({ models: ["backup-model"] });
    t.teardown(() => backup.close());
    const telemetry = captureTelemetry(t);
    const { base, fake } = await setup(t, [
      "--Gateway:Agents:TurnTimeout=00:00:02",
      "--AgentGateway:ProviderProbeSeconds=1",
      `--Providers:backup:BaseUrl=${backup.url}`,
      `--Providers:backup:ApiKey=${backup.apiKey}`,
      "--Providers:backup:Models:0=backup-model",
      "--Providers:backup:Priority=200",
    ]);
    const agent = (await call(base, "POST", "/api/agents", {})).body;

    fake.script.push({ kind: "hang", content: ["partial"] });
    const started = Date.now();
    const slow = call(base, "POST", `/api/agents/${agent.id}/message`, { message: "slow" });
    await until(() => fake.chatRequests().length === 1, "the provider request");
    const busy = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "again" });
    t.is(busy.status, 409);
    t.regex(busy.body.message, /already running a turn/);
    const timedOut = await slow;
    t.is(timedOut.status, 504);
    t.true(Date.now() - started >= 1900);
    await until(() => fake.closedEarly === 1, "the provider request aborted");
    t.is(backup.chatRequests().length, 0, "a timeout is no provider failure");

    // The agent takes the next message. A dropped socket is retried, an empty reply too (once).
    fake.script.push({ kind: "drop", content: ["par"] }, { kind: "empty" });
    const retried = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "retry" });
    t.is(retried.status, 200, JSON.stringify(retried.body));
    t.like(retried.body, { provider: "fake", response: "Hello from the fake.", turnIndex: 0 });
    t.is(fake.chatRequests().length, 4, "the dropped attempt, the empty one, the answer");

    // The primary fails (500 after its retries), the backup answers.
    fake.script.push(
      { kind: "status", status: 500 },
      { kind: "status", status: 500 },
      { kind: "status", status: 500 },
      { kind: "status", status: 500 },
    );
    const fallback = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "fall back" });
    t.is(fallback.status, 200, JSON.stringify(fallback.body));
    t.like(fallback.body, { provider: "backup", model: "backup-model", turnIndex: 1 });
    t.is(fake.chatRequests().length, 8, "four attempts on the primary");
    // The failed primary is skipped until a probe (every second here) brings it back.
    await until(async () => (await call(base, "GET", "/api/providers")).body[0].available, "the primary probed back");

    for (const f of [fake, backup]) for (let i = 0; i < 4; i++) f.script.push({ kind: "status", status: 503 });
    const down = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "anyone?" });
    t.is(down.status, 503);
    t.is(down.headers.get("retry-after"), "1");
    t.notRegex(JSON.stringify(down.body), new RegExp(fake.apiKey));
    t.like((await call(base, "GET", `/api/agents/${agent.id}`)).body, { turnCount: 2 });
    const turns = telemetry.spans("app.agent.turn");
    t.deepEqual(
      turns.map((span) => span.status.code),
      [SpanStatusCode.UNSET, SpanStatusCode.OK, SpanStatusCode.OK, SpanStatusCode.ERROR],
      "timed out: Unset; answered: Ok; every provider failed: Error",
    );
    const retriedCall = telemetry.spans("app.provider.chat_completion")[1]!;
    t.deepEqual(
      retriedCall.events.map((e) => [e.name, e.attributes?.["app.provider.retry_reason"]]),
      [
        ["retry", "unreachable"],
        ["retry", "empty_reply"],
      ],
    );
    t.is(retriedCall.attributes["app.provider.attempt"], 3);
    const errors = (await telemetry.points("app.providers.errors")).map((p) => [p.attributes["gen_ai.system"], p.value]).sort();
    // The fallback's failed primary, then both; the timeout is no error.
    t.deepEqual(errors, [
      ["backup", 1],
      ["fake", 2],
    ]);
  },
);

test.serial(
  "StreamChat over Connect: start, the provider's deltas, end; errors; a cancelled call aborts the provider request",
  async (t) => {
    const { base, fake, mesh } = await setup(t);
    const client = createClient(AgentService, createConnectTransport({ baseUrl: mesh.serviceUrl, httpVersion: "2" }));
    const agent = (await call(base, "POST", "/api/agents", {})).body;
    const collect = async (agentId: string, message: string, signal?: AbortSignal) => {
      const items: Pick<ChatEvent, "type" | "agentId" | "content">[] = [];
      for await (const e of client.streamChat({ agentId, message }, { signal }))
        items.push({ type: e.type, agentId: e.agentId, content: e.content });
      return items;
    };

    fake.script.push({ kind: "reply", content: ["One", "", " two", " three"] });
    t.deepEqual(await collect(agent.id, "count"), [
      { type: "start", agentId: agent.id, content: "" },
      { type: "content", agentId: agent.id, content: "One" },
      { type: "content", agentId: agent.id, content: " two" },
      { type: "content", agentId: agent.id, content: " three" },
      { type: "end", agentId: agent.id, content: "One two three" },
    ]);
    const unknown = await collect("00000000-0000-4000-8000-000000000000", "hi");
    t.is(unknown.at(-1)!.type, "error");
    t.regex(unknown.at(-1)!.content, /no agent/);
    t.is((await collect(agent.id, "")).at(-1)!.type, "error");

    fake.script.push({ kind: "hang", content: ["wait"] });
    const abort = new AbortController();
    const cancelled = collect(agent.id, "hang on", abort.signal);
    await until(() => fake.chatRequests().length === 2, "the provider request");
    abort.abort();
    await t.throwsAsync(cancelled);
    await until(() => fake.closedEarly === 1, "the provider request aborted");
    // The agent takes the next message.
    const next = await until(async () => {
      const r = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "next" });
      return r.status === 200 && r;
    }, "the next message answered");
    t.like(next.body, { turnIndex: 1 });
  },
);

test.serial("idle: Active → Idle after IdleTimeout, a turn makes it Active, stopped (reason idle) after twice IdleTimeout", async (t) => {
  const { base, mesh } = await setup(t, ["--Gateway:Agents:IdleTimeout=00:00:01.5"]);
  const events = await watchBus(mesh, "agents.v1.>", "AGENTS");
  t.teardown(() => events.stop());
  const agent = (await call(base, "POST", "/api/agents", {})).body;
  const idle = await until(async () => {
    const r = await call(base, "GET", `/api/agents/${agent.id}`);
    return r.body.state === "Idle" && r.body;
  }, "the agent idle");
  t.is(idle.lastActivityAt, agent.createdAt);
  const turn = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: "wake up" });
  t.is(turn.status, 200);
  const woken = (await call(base, "GET", `/api/agents/${agent.id}`)).body;
  t.is(woken.state, "Active");
  const lastActivity = Date.parse(woken.lastActivityAt);
  await until(async () => (await call(base, "GET", `/api/agents/${agent.id}`)).status === 404, "the idle agent stopped");
  const session = (await call(base, "GET", `/api/sessions/${agent.sessionId}`)).body;
  t.truthy(session.closedAt);
  t.is(session.turnCount, 1);
  await mesh.drainOutbox();
  const stopped = await until(() => decode(events.seen).find((e) => e.subject === "agents.v1.agent.stopped"), "the agent.stopped event");
  t.like(stopped.event, { agentId: agent.id, reason: "idle" });
  const occurred = stopped.event.occurredAt as { seconds: bigint; nanos: number };
  const late = Number(occurred.seconds) * 1000 + occurred.nanos / 1e6 - lastActivity - 3000;
  t.true(late >= 0, `stopped after twice IdleTimeout (${late} ms late)`);
  t.true(late <= 2000, `at most 2 s late (${late} ms)`);
});

if (realServers(test, "two meshes sharing PostgreSQL and NATS", ["postgres", "nats"])) {
  test.serial("two meshes on one PostgreSQL and NATS share agents, the concurrency limit and the turn marker", async (t) => {
    const fake = await startFakeOpenAi();
    const dataDir = mkdtempSync(join(tmpdir(), "agents-core-"));
    const flags = [...providerFlags(fake, dataDir), "--Gateway:Agents:MaxConcurrentAgents=2", "--Gateway:Agents:TurnTimeout=00:00:03"];
    const a = await startTestMesh({ flags });
    const b = await startTestMesh({ flags, databaseUrl: a.config.runtime.database.url });
    t.teardown(async () => {
      await b.close();
      await a.close();
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const baseA = a.frontUrl("agents");
    const baseB = b.frontUrl("agents");
    const events = await watchBus(b, "agents.v1.>", "AGENTS");
    t.teardown(() => events.stop());

    const spawned = (await call(baseA, "POST", "/api/agents", {})).body;
    t.deepEqual((await call(baseB, "GET", `/api/agents/${spawned.id}`)).body, spawned);
    // Concurrent spawns on both instances: exactly one takes the last place.
    const race = await Promise.all([call(baseA, "POST", "/api/agents", {}), call(baseB, "POST", "/api/agents", {})]);
    t.deepEqual(race.map((r) => r.status).sort(), [201, 429]);

    fake.script.push({ kind: "hang" });
    const slow = call(baseA, "POST", `/api/agents/${spawned.id}/message`, { message: "slow" });
    await until(() => fake.chatRequests().length === 1, "the provider request");
    t.is((await call(baseB, "POST", `/api/agents/${spawned.id}/message`, { message: "too" })).status, 409);
    t.is((await call(baseB, "DELETE", `/api/agents/${spawned.id}`)).status, 204);
    t.is((await call(baseA, "GET", `/api/agents/${spawned.id}`)).status, 404);
    await a.drainOutbox();
    await b.drainOutbox();
    await until(() => decode(events.seen).some((e) => e.subject === "agents.v1.agent.stopped"), "the stop seen through mesh B's bus");
    t.is((await slow).status, 504);
  });
}

test.serial("a DefaultProvider that names no provider stops start-up naming it", async (t) => {
  const fake = await startFakeOpenAi();
  const dataDir = mkdtempSync(join(tmpdir(), "agents-core-"));
  t.teardown(async () => {
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await t.throwsAsync(startTestMesh({ flags: [...providerFlags(fake, dataDir), "--Gateway:Agents:DefaultProvider=nope"] }), {
    instanceOf: ConfigError,
    message: /Invalid setting Gateway:Agents:DefaultProvider = "nope".*configured: fake/,
  });
});

test.serial("provider keys (--api-key, the credential store) and an assistant provider through its token exchange", async (t) => {
  const flagged = await startFakeOpenAi();
  const stored = await startFakeOpenAi({ models: ["stored-model"] });
  let exchange: FakeTokenExchange | undefined;
  const assistantApi = await startFakeOpenAi({ prefix: "", models: ["gpt-4o"], authorize: (a) => exchange?.acceptsBearer(a) ?? false });
  exchange = await startFakeTokenExchange({ oauthTokens: ["gho_test_oauth"], api: assistantApi.url });
  const dataDir = mkdtempSync(join(tmpdir(), "agents-core-"));
  await new CredentialStore({ dataDir }).set("provider.stored", stored.apiKey);
  const mesh = await startTestMesh({
    flags: [
      `--AgentGateway:DataDir=${dataDir}`,
      "--api-key",
      flagged.apiKey,
      `--Providers:flagged:BaseUrl=${flagged.url}`,
      "--Providers:flagged:Models=gpt-4o-mini",
      "--Providers:flagged:Priority=1",
      `--Providers:stored:BaseUrl=${stored.url}`,
      "--Providers:stored:Models=stored-model",
      "--Providers:hosted:Kind=assistant",
      `--Providers:hosted:TokenExchangeUrl=${exchange.url}`,
      "--Providers:hosted:OAuthToken=gho_test_oauth",
      "--Providers:hosted:Models:0=gpt-4o",
      "--Providers:hosted:EditorVersion=vscode/1.2.3",
    ],
  });
  t.teardown(async () => {
    await mesh.close();
    for (const f of [flagged, stored, assistantApi, exchange!]) await f.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const base = mesh.frontUrl("agents");
  const providers = await call(base, "GET", "/api/providers");
  t.deepEqual(
    providers.body.map((p: { name: string; kind: string; isDefault: boolean }) => [p.name, p.kind, p.isDefault]),
    [
      ["flagged", "openai", true],
      ["stored", "openai", false],
      ["hosted", "assistant", false],
    ],
  );
  for (const secret of [flagged.apiKey, stored.apiKey, "gho_test_oauth"]) t.false(JSON.stringify(providers.body).includes(secret));

  for (const [name, fake] of [
    ["flagged", flagged],
    ["stored", stored],
    ["hosted", assistantApi],
  ] as const) {
    const agent = (await call(base, "POST", "/api/agents", { provider: name })).body;
    const reply = await call(base, "POST", `/api/agents/${agent.id}/message`, { message: `hello ${name}` });
    t.is(reply.status, 200, `${name}: ${JSON.stringify(reply.body)}`);
    t.like(reply.body, { provider: name, response: "Hello from the fake." });
    const sent = fake.chatRequests().at(-1)!;
    t.like(sent.body, { messages: [{ role: "user", content: `hello ${name}` }] }, name);
  }
  const hostedCall = assistantApi.chatRequests().at(-1)!;
  t.is(hostedCall.headers["editor-version"], "vscode/1.2.3");
  t.is(hostedCall.headers.authorization, `Bearer ${exchange.issued[0]}`);
  t.is(exchange.requests[0]!.headers.authorization, "token gho_test_oauth");
  t.is(stored.chatRequests().at(-1)!.headers.authorization, `Bearer ${stored.apiKey}`);
  t.is(flagged.chatRequests().at(-1)!.headers.authorization, `Bearer ${flagged.apiKey}`);
});
