// The dispatcher's rules, with a small catalogue of test tools: resolution and aliases, the schema
// check and the envelope, the deny lists, the tool's policy check, confirmation by tier and mode
// with the session overrides, errors, the cap, the audit entry with redaction, and the counter.
import type { Counter } from "@opentelemetry/api";
import test from "ava";
import type { AuditEntry } from "../audit/types.js";
import { Dispatcher } from "./dispatch.js";
import { memoryPolicyStore } from "./policy.js";
import { defaultToolsSettings, type ToolsSettings, toolSettingsOf } from "./settings.js";
import { testToolContext } from "./testing.js";
import { type ConfirmQuestion, type InvokeRequest, PolicyBlock, ToolError, type ToolSpec } from "./tool.js";

const echo: ToolSpec = {
  name: "read_file",
  description: "echo",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string" },
      startLine: { type: "integer" },
      all: { type: "boolean", default: false },
      mode: { type: "string", enum: ["a", "b"], default: "a" },
    },
    required: ["path"],
  },
  async run(args, ctx) {
    if (args.path === "boom") throw new Error("secret internals");
    if (args.path === "bad") throw new ToolError("no such file");
    if (args.path === "../out") throw new PolicyBlock("'../out' is outside the workspace");
    if (args.path === "long") return "x".repeat(500);
    if (args.path === "slow") return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("aborted")));
    return { args, summary: ctx.summary };
  },
};
const confirmOnce: ToolSpec = {
  name: "write_file",
  description: "C tool",
  tier: "C",
  parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
  async check(args) {
    if (String(args.path).startsWith("/")) throw new PolicyBlock(`'${args.path}' is outside the workspace`);
  },
  async run(args) {
    return `wrote ${args.path}`;
  },
};
const everyCall: ToolSpec = {
  name: "run_command",
  description: "X tool",
  tier: "X",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  async run(args) {
    return `ran ${args.command}`;
  },
};
const rpcTool: ToolSpec = {
  name: "rpc.tracking.v1.AssetService.GetAsset",
  functionName: "rpc_tracking_v1_AssetService_GetAsset",
  description: "rpc",
  tier: "A",
  parameters: { type: "object", properties: {} },
  async run() {
    return { ok: true };
  },
};

async function setup(settings: Partial<ToolsSettings> = {}) {
  const ctx = await testToolContext();
  const audited: AuditEntry[] = [];
  const counted: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const errors: string[] = [];
  const counter = { add: (_n: number, attributes: Record<string, unknown>) => counted.push(attributes) } as unknown as Counter;
  const policies = memoryPolicyStore();
  const dispatcher = new Dispatcher({
    settings: { ...toolSettingsOf({ ...defaultToolsSettings(), ...settings }, ctx.settings.dataDir), workspaceRoot: ctx.workspace.root },
    services: ctx.services,
    families: [[echo, confirmOnce, everyCall, rpcTool]],
    policies,
    audit: (entry) => audited.push(entry),
    counter: () => counter,
    logger: { warn: (_o: object, m: string) => warnings.push(m), error: (_o: object, m: string) => errors.push(m) } as never,
  });
  const asked: ConfirmQuestion[] = [];
  const call = (name: string, args: InvokeRequest["arguments"], extra: Partial<InvokeRequest> = {}) =>
    dispatcher.invoke({ name, arguments: args, source: "agent", agentId: "a1", sessionId: "s1", provider: "fake", ...extra });
  const answering = (answer: boolean) => async (q: ConfirmQuestion) => {
    asked.push(q);
    return answer;
  };
  return { dispatcher, audited, counted, warnings, errors, policies, call, asked, answering };
}

test("names resolve: canonical, function name, alias; unknown names are an Error, denied, tier X", async (t) => {
  const { dispatcher, call, audited } = await setup();
  t.is(dispatcher.resolve("read")?.name, "read_file");
  t.is(dispatcher.resolve("rpc_tracking_v1_AssetService_GetAsset")?.name, "rpc.tracking.v1.AssetService.GetAsset");
  t.is(dispatcher.resolve("nope"), undefined);
  const viaAlias = await call("read", { path: "a.txt" });
  t.like(viaAlias, { name: "read", canonical: "read_file", tier: "A", outcome: "ok", isError: false });
  const unknown = await call("rm_rf", '{"path":"/"}');
  t.like(unknown, {
    status: "unknown_tool",
    name: "rm_rf",
    canonical: "rm_rf",
    tier: "X",
    outcome: "denied",
    output: "Error: unknown tool 'rm_rf'",
    isError: true,
  });
  t.like(audited[1], { resource: "rm_rf", policyResult: "denied", detail: { status: "unknown_tool", alias: "rm_rf", tier: "X" } });
});

test("arguments: bad JSON and wrong types name the argument, unknown properties dropped, defaults filled", async (t) => {
  const { call } = await setup();
  t.regex((await call("read_file", "{not json")).output, /^Error: the arguments are not valid JSON/);
  t.is((await call("read_file", "[1]")).output, "Error: the arguments must be a JSON object");
  t.is((await call("read_file", { path: 3 })).output, "Error: argument 'path' must be a string (got number)");
  t.is((await call("read_file", { path: "a", startLine: 1.5 })).output, "Error: argument 'startLine' must be an integer (got number)");
  t.is((await call("read_file", { path: "a", all: "yes" })).output, "Error: argument 'all' must be a boolean (got string)");
  t.is((await call("read_file", { path: "a", mode: "c" })).output, "Error: argument 'mode' must be one of a, b (got \"c\")");
  t.is((await call("read_file", {})).output, "Error: missing required argument 'path'");
  const ok = await call("read_file", '{"path":"a","extra":1,"startLine":2}');
  t.deepEqual(JSON.parse(ok.output), { args: { path: "a", startLine: 2, all: false, mode: "a" }, summary: false });
});

test("envelope: stripped; summary reaches the tool; maxResultChars and Tools:MaxOutputChars cap; noContext omits; timeoutMs aborts", async (t) => {
  const { call } = await setup({ maxOutputChars: 200 });
  const summary = await call("read_file", { path: "a", summary: true, noStream: true, maxResultChars: 1000 });
  t.deepEqual(JSON.parse(summary.output), { args: { path: "a", all: false, mode: "a" }, summary: true });
  t.is((await call("read_file", { path: "long", maxResultChars: 10 })).output, `${"x".repeat(10)}\n[truncated at 10 of 500 characters]`);
  t.is((await call("read_file", { path: "long" })).output, `${"x".repeat(200)}\n[truncated at 200 of 500 characters]`);
  t.is((await call("read_file", { path: "long", noContext: true })).output, "[output omitted: 500 characters]");
  t.is(
    (await call("read_file", { path: "a", maxResultChars: "ten" })).output,
    "Error: argument 'maxResultChars' must be a non-negative integer",
  );
  t.like(await call("read_file", { path: "slow", timeoutMs: 20 }), { output: "Error: read_file timed out after 20 ms", isError: true });
});

test("errors: ToolError is `Error: …`; an unexpected exception is logged and answered `Error: <tool> failed`; PolicyBlock is denied", async (t) => {
  const { call, errors, audited } = await setup();
  t.like(await call("read_file", { path: "bad" }), { output: "Error: no such file", outcome: "ok", isError: true });
  t.like(await call("read_file", { path: "boom" }), { output: "Error: read_file failed", outcome: "ok", isError: true });
  t.deepEqual(errors, ["a tool failed unexpectedly"]);
  t.like(await call("read_file", { path: "../out" }), {
    output: "Blocked by policy: '../out' is outside the workspace",
    outcome: "denied",
  });
  t.like(audited[2], { policyResult: "denied", severity: "warning", detail: { status: "blocked", failed: true } });
});

test("deny lists: Tools:Deny and the agent's deny (globs, case-insensitive, aliases too) answer `Tool blocked: …` and hide definitions", async (t) => {
  const { call, policies, dispatcher } = await setup({ deny: ["RUN_*"] });
  t.is((await call("run_command", { command: "ls" })).output, "Tool blocked: 'run_command' is denied by Tools:Deny (RUN_*).");
  t.is((await call("bash", { command: "ls" })).output, "Tool blocked: 'bash' is denied by Tools:Deny (RUN_*).");
  await policies.setAgent("a1", { allow: [], deny: ["writ?_file"] });
  t.like(await call("write", { path: "a", content: "x" }), {
    outcome: "denied",
    output: "Tool blocked: 'write' is denied by the agent's tool policy (writ?_file).",
  });
  t.deepEqual(
    (await dispatcher.definitions("a1")).map((d) => d.function.name),
    ["read_file", "rpc_tracking_v1_AssetService_GetAsset"],
  );
  t.deepEqual(
    (await dispatcher.definitions()).map((d) => d.function.name),
    ["read_file", "write_file", "rpc_tracking_v1_AssetService_GetAsset"],
  );
  // /permissions off lifts the agent's deny, never Tools:Deny.
  await policies.setSession("s1", { permissionsOff: true });
  t.is((await call("write_file", { path: "a", content: "x" })).output, "wrote a");
  t.like(await call("run_command", { command: "ls" }), { outcome: "denied" });
});

test("the tool's policy check runs before confirmation: nothing is asked", async (t) => {
  const { call, asked, answering } = await setup();
  t.like(await call("write_file", { path: "/etc/passwd", content: "x" }, { confirm: answering(true) }), {
    outcome: "denied",
    output: "Blocked by policy: '/etc/passwd' is outside the workspace",
  });
  t.is(asked.length, 0);
});

test("confirmation: A runs, C asks once per session, X every call; a deny or no asker is `User denied tool execution.`", async (t) => {
  const { call, asked, answering, audited } = await setup();
  t.like(await call("read_file", { path: "a" }), { outcome: "ok" });
  t.like(await call("write_file", { path: "a", content: "secret stuff" }), {
    outcome: "user_denied",
    output: "User denied tool execution.",
  });
  t.like(await call("write_file", { path: "a", content: "secret stuff" }, { confirm: answering(false) }), { outcome: "user_denied" });
  t.like(await call("write_file", { path: "a", content: "secret stuff" }, { confirm: answering(true) }), {
    outcome: "ok",
    output: "wrote a",
  });
  t.like(await call("write_file", { path: "b", content: "y" }, { confirm: answering(false) }), { outcome: "ok", output: "wrote b" });
  t.like(await call("write_file", { path: "b", content: "y" }, { sessionId: "s2", confirm: answering(false) }), { outcome: "user_denied" });
  t.deepEqual(asked[0], { tool: "write_file", canonical: "write_file", tier: "C", arguments: { path: "a", content: "[REDACTED]" } });
  const before = asked.length;
  t.like(await call("bash", { command: "ls" }, { confirm: answering(true) }), { outcome: "ok", output: "ran ls" });
  t.like(await call("bash", { command: "ls" }, { confirm: answering(true) }), { outcome: "ok" });
  t.is(asked.length - before, 2);
  t.like(audited[1], { policyResult: "user_denied", detail: { status: "user_denied" } });
});

test("allow lists count as A; modes auto and deny; /autorun; --dangerously-skip-permissions logs a warning", async (t) => {
  const allowed = await setup({ allow: ["run_command"] });
  t.like(await allowed.call("run_command", { command: "ls" }), { outcome: "ok" });
  await allowed.policies.setAgent("a1", { allow: ["write_*"], deny: [] });
  t.like(await allowed.call("write_file", { path: "a", content: "x" }), { outcome: "ok" });

  const modes = await setup();
  await modes.policies.setAgent("a1", { approvalMode: "deny", allow: [], deny: [] });
  t.like(await modes.call("run_command", { command: "ls" }, { confirm: modes.answering(true) }), {
    outcome: "denied",
    output: "Blocked by policy: run_command needs confirmation and approvals are off",
  });
  t.is(await modes.dispatcher.decisionFor("bash", "a1", "s1"), "deny");
  // /permissions off lifts every mode, deny included.
  await modes.policies.setSession("s1", { permissionsOff: true });
  t.like(await modes.call("run_command", { command: "ls" }), { outcome: "ok" });
  await modes.policies.setSession("s1", { permissionsOff: false, autorun: true });
  t.like(await modes.call("run_command", { command: "ls" }), { outcome: "ok" });
  await modes.policies.setSession("s1", { autorun: false });
  await modes.policies.setAgent("a1", { approvalMode: "auto", allow: [], deny: [] });
  t.like(await modes.call("run_command", { command: "ls" }), { outcome: "ok" });
  t.is(await modes.dispatcher.decisionFor("run_command", "a1", "s1"), "allow");
  t.is(await modes.dispatcher.decisionFor("read_file"), "allow");
  t.is(await modes.dispatcher.decisionFor("made_up"), "confirm");

  const global = await setup({ approval: { mode: "deny", timeoutSeconds: 60 } });
  t.like(await global.call("write_file", { path: "a", content: "x" }), { outcome: "denied" });

  const skip = await setup({ dangerouslySkipPermissions: true, deny: ["read_*"] });
  t.is(skip.warnings.length, 1);
  await skip.policies.setAgent("a1", { approvalMode: "deny", allow: [], deny: ["run_command"] });
  t.like(await skip.call("run_command", { command: "ls" }), { outcome: "ok" });
  t.like(await skip.call("read_file", { path: "a" }), { outcome: "denied" }, "Tools:Deny stays");
});

test("one audit entry per invocation, arguments redacted at any depth; the counter with its attributes", async (t) => {
  const { call, audited, counted } = await setup();
  await call(
    "read",
    JSON.stringify({ path: "a", nested: { apiKey: "k", list: [{ password: "p", Authorization: "b" }], env: { A: 1 } }, text: "t" }),
  );
  await call("rpc_tracking_v1_AssetService_GetAsset", {}, { source: "rpc", agentId: undefined, sessionId: undefined });
  t.is(audited.length, 2);
  const [first] = audited;
  t.like(first, { action: "tool.invoke", severity: "info", resource: "read_file", sessionId: "s1", policyResult: "ok" });
  t.like(first!.detail, { status: "completed", alias: "read", canonical: "read_file", tier: "A", source: "agent", failed: false });
  t.deepEqual(first!.detail!.arguments, {
    path: "a",
    nested: { apiKey: "[REDACTED]", list: [{ password: "[REDACTED]", Authorization: "[REDACTED]" }], env: "[REDACTED]" },
    text: "[REDACTED]",
  });
  t.true(typeof first!.detail!.durationMs === "number");
  t.like(audited[1], { resource: "rpc.tracking.v1.AssetService.GetAsset", detail: { source: "rpc" } });
  t.false("sessionId" in audited[1]!);
  t.deepEqual(counted, [
    { "gen_ai.tool.name": "read_file", "app.tool.name": "read", "app.tool.outcome": "ok", "gen_ai.system": "fake" },
    {
      "gen_ai.tool.name": "rpc.tracking.v1.AssetService.GetAsset",
      "app.tool.name": "rpc_tracking_v1_AssetService_GetAsset",
      "app.tool.outcome": "ok",
      "gen_ai.system": "none",
    },
  ]);
});

test("todo_write: creates and updates through create_task and update_task; completed means done", async (t) => {
  const tasks = new Map<string, { id: string; title: string; status: string }>();
  const create: ToolSpec = {
    name: "create_task",
    description: "",
    tier: "C",
    parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
    async run(args) {
      const task = { id: `t${tasks.size + 1}`, title: String(args.title), status: "pending" };
      tasks.set(task.id, task);
      return task;
    },
  };
  const update: ToolSpec = {
    ...create,
    name: "update_task",
    async run(args) {
      const task = tasks.get(String(args.id));
      if (!task) throw new ToolError(`no task ${args.id}`);
      if (args.title) task.title = String(args.title);
      if (args.status) task.status = String(args.status);
      return task;
    },
  };
  const ctx = await testToolContext();
  const dispatcher = new Dispatcher({
    settings: { ...toolSettingsOf({ ...defaultToolsSettings(), approval: { mode: "auto", timeoutSeconds: 60 } }, ctx.settings.dataDir) },
    services: ctx.services,
    families: [[create, update]],
    audit: () => {},
    logger: { warn() {}, error() {} },
  });
  const first = await dispatcher.invoke({
    name: "todo_write",
    source: "rpc",
    arguments: {
      todos: [
        { content: "one", status: "pending" },
        { content: "two", status: "completed" },
      ],
    },
  });
  t.like(first, { canonical: "update_task", tier: "C", outcome: "ok" });
  t.deepEqual(JSON.parse(first.output), [
    { id: "t1", title: "one", status: "pending" },
    { id: "t2", title: "two", status: "done" },
  ]);
  const second = await dispatcher.invoke({
    name: "todo_write",
    source: "rpc",
    arguments: { todos: [{ id: "t1", content: "uno", status: "in_progress" }] },
  });
  t.deepEqual(JSON.parse(second.output), [{ id: "t1", title: "uno", status: "in_progress" }]);
  t.is(
    (await dispatcher.invoke({ name: "todo_write", source: "rpc", arguments: { todos: [{ content: "x" }] } })).output,
    "Error: missing required argument 'todos[0].status'",
  );
});
