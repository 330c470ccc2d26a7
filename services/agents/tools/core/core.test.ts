// The core family without a database: think, capabilities, the policy tools through a dispatcher,
// check_budget, ask_questions' request checks, and the subagents over a scripted chat service.
import test from "ava";
import { Dispatcher } from "../dispatch.js";
import { defaultToolsSettings, toolSettingsOf } from "../settings.js";
import { testToolContext, toolNamed } from "../testing.js";
import { type ToolChatRequest, ToolError, type ToolSpec } from "../tool.js";
import { parseQuestions } from "./ask-questions.js";
import { capabilitiesOf } from "./capabilities.js";
import { coreTools } from "./index.js";

const xTool: ToolSpec = {
  name: "run_command",
  description: "",
  tier: "X",
  parameters: { type: "object", properties: {} },
  async run() {
    return "ran";
  },
};

async function setup(chat?: (agentId: string | undefined, request: ToolChatRequest) => Promise<string>) {
  const ctx = await testToolContext({ services: undefined });
  if (chat) ctx.services.chat = chat;
  const dispatcher = new Dispatcher({
    settings: { ...toolSettingsOf({ ...defaultToolsSettings(), deny: ["get_context_*"] }, ctx.settings.dataDir) },
    services: ctx.services,
    families: [coreTools, [xTool]],
    audit: () => {},
    logger: { warn() {}, error() {} },
  });
  const tools = dispatcher.tools();
  return { ctx, dispatcher, run: (name: string, args: Record<string, unknown> = {}) => toolNamed(tools, name).run(args, ctx) };
}

test("think notes the thought; an empty one is an Error", async (t) => {
  const { run } = await setup();
  t.is(await run("think", { thought: "plan" }), "Thought noted: plan");
  await t.throwsAsync(run("think", { thought: " " }), { instanceOf: ToolError, message: "think needs a thought" });
});

test("capabilities: known models by prefix, an unknown model gets the documented defaults", async (t) => {
  t.deepEqual(capabilitiesOf("no-such-model"), {
    contextWindow: 128000,
    vision: true,
    toolCalling: true,
    streaming: true,
    json_mode: true,
  });
  t.like(capabilitiesOf("gpt-3.5-turbo-0125"), { contextWindow: 16385, vision: false });
  t.like(capabilitiesOf("claude-3-5-sonnet"), { contextWindow: 200000, vision: true });
  const { run } = await setup();
  // No agent in this context: the unknown-model answer.
  t.deepEqual(await run("get_capabilities"), { contextWindow: 128000, vision: true, toolCalling: true, streaming: true, json_mode: true });
  t.is(await run("check_vision_support"), "true");
  t.is(await run("get_context_window"), "128000");
});

test("policy tools answer as the dispatcher would decide; unknown names are X; check_budget", async (t) => {
  const { run } = await setup();
  t.deepEqual(await run("validate_permission", { tool: "think" }), { tool: "think", canonical: "think", tier: "A", decision: "allow" });
  t.deepEqual(await run("validate_permission", { tool: "nope" }), { tool: "nope", canonical: "nope", tier: "X", decision: "confirm" });
  t.deepEqual(await run("check_policy", { action: "reset_usage" }), {
    tool: "reset_usage",
    canonical: "reset_usage",
    tier: "C",
    decision: "confirm",
  });
  t.deepEqual(await run("check_policy", { action: "get_context_window" }), {
    tool: "get_context_window",
    canonical: "get_context_window",
    tier: "A",
    decision: "deny",
  });
  t.deepEqual(await run("check_budget", { estimatedTokens: 1000 }), { contextWindow: 128000, withinBudget: true });
  t.deepEqual(await run("check_budget", { estimatedTokens: 20000, model: "gpt-3.5-turbo" }), { contextWindow: 16385, withinBudget: false });
});

test("the catalogue's definitions: denied tools left out, JSON Schema with integer, boolean, enum, required", async (t) => {
  const { dispatcher } = await setup();
  const defs = await dispatcher.definitions();
  const names = defs.map((d) => d.function.name);
  t.false(names.includes("get_context_window"));
  const budget = defs.find((d) => d.function.name === "check_budget")!.function.parameters as Record<string, unknown>;
  t.like(budget, { type: "object", properties: { estimatedTokens: { type: "integer" } }, required: ["estimatedTokens"] });
  const spawn = defs.find((d) => d.function.name === "spawn_agent")!.function.parameters as {
    properties: Record<string, { enum?: string[]; default?: unknown }>;
    required: string[];
  };
  t.deepEqual(spawn.properties.type!.enum, ["explore", "task", "plan", "review", "general"]);
  t.is(spawn.properties.mode!.default, "single");
  t.deepEqual(spawn.required, ["type", "prompt"]);
  const team = defs.find((d) => d.function.name === "spawn_team")!.function.parameters as {
    properties: Record<string, { type?: string; default?: unknown }>;
    required: string[];
  };
  t.like(team.properties.multiTurn, { type: "boolean", default: false });
  t.deepEqual(team.required, ["strategy", "agents", "goal"]);
});

test("ask_questions checks its request before asking anyone", (t) => {
  t.throws(() => parseQuestions("{"), { message: "questionsJson is not valid JSON" });
  t.throws(() => parseQuestions('{"questions":[]}'), { message: "questionsJson needs a non-empty questions array" });
  t.throws(() => parseQuestions('{"questions":[{"key":"a","prompt":"A?","type":"colour"}]}'), {
    message: /questions\[0\]\.type must be one of/,
  });
  t.throws(() => parseQuestions('{"questions":[{"key":"a","prompt":"A?","type":"singleSelect"}]}'), {
    message: "questions[0] (singleSelect) needs options",
  });
  t.throws(() => parseQuestions('{"questions":[{"key":"a","prompt":"A?"},{"key":"a","prompt":"B?"}]}'), {
    message: "questions[1].key 'a' is repeated",
  });
  t.like(parseQuestions('{"title":"T","questions":[{"key":"n","prompt":"How many?","type":"number"}]}'), {
    title: "T",
    allowCancel: true,
    questions: [{ key: "n", type: "number" }],
  });
});

test("subagents: spawn_agent's child gets its role and only A tools for explore; spawn_team strategies; query_team_context", async (t) => {
  const requests: ToolChatRequest[] = [];
  const { run } = await setup(async (_agentId, request) => {
    requests.push(request);
    const last = request.messages.at(-1) as { content: string };
    return `answer to: ${last.content.split("\n").at(-1)}`;
  });
  t.is(await run("spawn_agent", { type: "explore", prompt: "look around", mode: "single" }), "answer to: look around");
  t.regex((requests[0]!.messages[0] as { content: string }).content, /exploration subagent/);
  t.false(requests[0]!.tools!.includes("run_command"));
  t.true(requests[0]!.tools!.includes("think"));
  await run("spawn_agent", { type: "task", prompt: "do it", mode: "multi" });
  t.true(requests[1]!.tools!.includes("run_command"));
  t.is(requests.length, 3, "multi: a second turn");

  const team = (await run("spawn_team", {
    strategy: "sequential",
    goal: "ship",
    multiTurn: false,
    agents: [
      { name: "alice", type: "plan", prompt: "plan it" },
      { name: "bob", type: "review", prompt: "review it" },
    ],
  })) as { strategy: string; results: Record<string, string> };
  t.is(team.strategy, "sequential");
  t.deepEqual(Object.keys(team.results), ["alice", "bob"]);
  t.regex((requests.at(-1)!.messages[1] as { content: string }).content, /alice answered/);
  t.deepEqual(await run("query_team_context", { key: "results" }), team.results);
  t.is(await run("query_team_context", { key: "bob" }), team.results.bob);
  t.deepEqual(
    ((await run("query_team_context", { key: "events" })) as { event: string }[]).map((e) => e.event),
    ["started", "finished", "started", "finished"],
  );
  await t.throwsAsync(run("query_team_context", { key: "carol" }), { message: /no team context 'carol'/ });

  const supervised = (await run("spawn_team", {
    strategy: "supervisor",
    goal: "g",
    multiTurn: false,
    agents: [
      { name: "boss", type: "general", prompt: "lead" },
      { name: "w1", type: "task", prompt: "work" },
    ],
  })) as { results: Record<string, string> };
  t.deepEqual(Object.keys(supervised.results).sort(), ["boss", "w1"]);
  await t.throwsAsync(
    run("spawn_team", { strategy: "debate", goal: "g", multiTurn: false, agents: [{ name: "a", type: "general", prompt: "p" }] }),
    {
      message: "the debate strategy needs at least two agents",
    },
  );
});
