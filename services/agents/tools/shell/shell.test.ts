// run_command, exec and process: the record, the shell rules before anything runs, the jail of cwd,
// timeouts, and exec sessions managed by process.
import { randomUUID } from "node:crypto";
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { until } from "../../../../test/support/until.js";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { shellFamily } from "./index.js";

const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) =>
  toolNamed(shellFamily, name).run(args, ctx) as Promise<Record<string, unknown>>;

test("run_command answers { exitCode, output, timedOut, truncated, durationMs } from the workspace or cwd", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  await mkdir(join(ctx.workspace.root, "sub"));
  const result = await run("run_command", { command: "pwd; echo err >&2; exit 2" }, ctx);
  t.deepEqual(Object.keys(result).sort(), ["durationMs", "exitCode", "output", "timedOut", "truncated"]);
  t.is(result.exitCode, 2);
  t.is(result.output, `${ctx.workspace.root}\nerr\n`);
  t.is((await run("run_command", { command: "pwd", cwd: "sub" }, ctx)).output, `${join(ctx.workspace.root, "sub")}\n`);
});

test("run_command is killed at timeoutSeconds, or at the envelope's timeoutMs", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  const result = await run("run_command", { command: "echo begun; sleep 30", timeoutSeconds: 1 }, ctx);
  t.true(result.timedOut);
  t.is(result.output, "begun\n");
  const envelope = await run("run_command", { command: "sleep 30" }, { ...ctx, timeoutMs: 200 });
  t.true(envelope.timedOut);
});

test("run_command output is capped at Tools:MaxOutputChars", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID(), settings: { maxOutputChars: 100 } });
  const result = await run("run_command", { command: "seq 1 1000" }, ctx);
  t.is((result.output as string).length, 100);
  t.true(result.truncated);
});

test("the shell rules refuse the whole line before anything runs", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID(), settings: { shell: { deny: ["rm"], allow: [], passEnv: [] } } });
  await t.throwsAsync(run("run_command", { command: "touch made; rm -f made" }, ctx), {
    instanceOf: PolicyBlock,
    message: "'rm' is not allowed",
  });
  await t.throwsAsync(run("exec", { command: "touch made && sh -c 'rm made'" }, ctx), {
    instanceOf: PolicyBlock,
    message: "'rm' is not allowed",
  });
  t.deepEqual(await readdir(ctx.workspace.root), []);
  t.is((await run("run_command", { command: "echo rm" }, ctx)).output, "rm\n");
});

test("a cwd outside the workspace is refused", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  await t.throwsAsync(run("run_command", { command: "ls", cwd: "../.." }, ctx), {
    instanceOf: PolicyBlock,
    message: /outside the workspace/,
  });
  await t.throwsAsync(run("exec", { command: "ls", cwd: "/" }, ctx), { instanceOf: PolicyBlock, message: /outside the workspace/ });
});

test("exec answers the record with sessionId and status when the command ends within yieldMs", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  const result = await run("exec", { command: "echo quick", yieldMs: 10_000 }, ctx);
  t.is(result.status, "completed");
  t.is(result.exitCode, 0);
  t.is(result.output, "quick\n");
  t.is(typeof result.sessionId, "string");
  t.is((await run("exec", { command: "exit 4", yieldMs: 10_000 }, ctx)).status, "failed");
});

test("exec on another host is an Error", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  await t.throwsAsync(run("exec", { command: "ls", host: "remote" }, ctx), { instanceOf: ToolError, message: /only on host 'local'/ });
});

test("a command outliving yieldMs is running; process polls, writes, logs and removes it", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  const started = await run("exec", { command: "echo ready; read line; echo got $line", yieldMs: 0 }, ctx);
  t.is(started.status, "running");
  t.is(started.exitCode, null);
  const id = started.sessionId as string;
  const listed = (await toolNamed(shellFamily, "process").run({ action: "list" }, ctx)) as Record<string, unknown>[];
  t.deepEqual(
    listed.map((s) => [s.sessionId, s.status, s.command]),
    [[id, "running", "echo ready; read line; echo got $line"]],
  );
  let seen = started.output as string;
  await until(async () => {
    seen += (await run("process", { action: "poll", id }, ctx)).output as string;
    return seen.includes("ready");
  }, "ready");
  await run("process", { action: "write", id, input: "hello\n" }, ctx);
  const done = await run("process", { action: "poll", id, yieldMs: 30_000 }, ctx);
  t.is(done.status, "completed");
  t.is(`${seen}${done.output}`, "ready\ngot hello\n");
  t.is((await run("process", { action: "log", id }, ctx)).output, "ready\ngot hello\n");
  t.is((await run("process", { action: "log", id, maxChars: 6 }, ctx)).output, "hello\n");
  await t.throwsAsync(run("process", { action: "write", id, input: "x" }, ctx), { instanceOf: ToolError, message: /is not running/ });
  t.deepEqual(await run("process", { action: "remove", id }, ctx), { removed: 1 });
  await t.throwsAsync(run("process", { action: "poll", id }, ctx), { instanceOf: ToolError, message: /no exec session/ });
});

test("background exec answers at once; kill ends it; a running session is removed only with force", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  const a = await run("exec", { command: "sleep 30", background: true }, ctx);
  const b = await run("exec", { command: "sleep 30", background: true }, ctx);
  t.is(a.status, "running");
  await t.throwsAsync(run("process", { action: "remove", id: b.sessionId }, ctx), { instanceOf: ToolError, message: /is running/ });
  const killed = await run("process", { action: "kill", id: a.sessionId }, ctx);
  t.is(killed.status, "killed");
  t.not(killed.exitCode, 0);
  t.deepEqual(await run("process", { action: "clear" }, ctx), { removed: 1 });
  t.deepEqual(await run("process", { action: "clear", force: true }, ctx), { removed: 1 });
  t.deepEqual(await toolNamed(shellFamily, "process").run({ action: "list" }, ctx), []);
});

test("exec's timeoutMs kills the session (0 disables it), and sessions are private to their owner", async (t) => {
  const ctx = await testToolContext({ agentId: "owner-a" });
  const timed = await run("exec", { command: "sleep 30", timeoutMs: 200, yieldMs: 30_000 }, ctx);
  t.true(timed.timedOut);
  t.is(timed.status, "failed");
  const open = await run("exec", { command: "sleep 30", timeoutMs: 0, yieldMs: 300 }, ctx);
  t.is(open.status, "running");
  const other = await testToolContext({ agentId: "owner-b" });
  await t.throwsAsync(run("process", { action: "kill", id: open.sessionId }, other), { instanceOf: ToolError, message: /no exec session/ });
  t.is((await run("process", { action: "kill", id: open.sessionId }, ctx)).status, "killed");
  await t.throwsAsync(run("process", { action: "poll" }, ctx), { instanceOf: ToolError, message: "process poll needs an id" });
});

test("exec with pty runs the command on a terminal", async (t) => {
  const ctx = await testToolContext({ agentId: randomUUID() });
  const result = await run("exec", { command: "test -t 1 && echo tty || echo notty", pty: true, yieldMs: 30_000 }, ctx);
  t.is(result.status, "completed");
  t.regex(result.output as string, /^tty\r?\n$/);
  t.is((await run("exec", { command: "test -t 1 && echo tty || echo notty", yieldMs: 30_000 }, ctx)).output, "notty\n");
});
