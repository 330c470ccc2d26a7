// The child-process runner: the jail's cwd, the environment filter, the output cap, the exit code,
// and the kill of the whole process group on timeout and abort.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { processGone } from "../../../../test/support/process-gone.js";
import { until } from "../../../../test/support/until.js";
import { testToolContext } from "../testing.js";
import { OutputBuffer } from "./output.js";
import { childEnv, runShell } from "./runner.js";

test("a command runs in the given directory with its exit code and output", async (t) => {
  const ctx = await testToolContext();
  await writeFile(join(ctx.workspace.root, "marker.txt"), "here\n");
  const result = await runShell("pwd; cat marker.txt; echo oops >&2; exit 3", {
    cwd: ctx.workspace.root,
    env: childEnv(ctx.settings),
    maxChars: 1000,
  });
  t.is(result.exitCode, 3);
  t.is(result.output, `${ctx.workspace.root}\nhere\noops\n`);
  t.false(result.timedOut);
  t.false(result.truncated);
  t.true(result.durationMs >= 0);
});

test("a shell line never runs the user's ~/.bashrc, even with stdin piped (bash takes a socket for rshd)", async (t) => {
  const ctx = await testToolContext();
  const home = join(ctx.workspace.root, "home");
  await mkdir(home);
  await writeFile(join(home, ".bashrc"), "echo bashrc-ran\n");
  const env = childEnv(ctx.settings, { HOME: home });
  const piped = await runShell("echo line", { cwd: ctx.workspace.root, env, maxChars: 1000, interactive: true });
  t.is(piped.output, "line\n");
  const withInput = await runShell("cat", { cwd: ctx.workspace.root, env, maxChars: 1000, input: "given\n" });
  t.is(withInput.output, "given\n");
});

test("the environment holds only the base variables, PassEnv and the caller's own", async (t) => {
  process.env.MESHWORK_TEST_SECRET = "s3cr3t";
  process.env.MESHWORK_TEST_PASSED = "passed";
  t.teardown(() => {
    delete process.env.MESHWORK_TEST_SECRET;
    delete process.env.MESHWORK_TEST_PASSED;
  });
  const ctx = await testToolContext({ settings: { shell: { deny: [], allow: [], passEnv: ["MESHWORK_TEST_PASSED"] } } });
  const result = await runShell("env", { cwd: ctx.workspace.root, env: childEnv(ctx.settings, { EXTRA: "1" }), maxChars: 100_000 });
  const names = result.output
    .split("\n")
    .filter((l) => l.includes("="))
    .map((l) => l.slice(0, l.indexOf("=")))
    .filter((n) => !["PWD", "SHLVL", "_", "OLDPWD"].includes(n));
  t.false(result.output.includes("s3cr3t"));
  t.true(result.output.includes("MESHWORK_TEST_PASSED=passed"));
  t.true(result.output.includes("EXTRA=1"));
  for (const name of names)
    t.true(["PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER", "MESHWORK_TEST_PASSED", "EXTRA"].includes(name), name);
});

test("output over the cap is cut and marked truncated", async (t) => {
  const ctx = await testToolContext();
  const result = await runShell("head -c 5000 /dev/zero | tr '\\0' x", {
    cwd: ctx.workspace.root,
    env: childEnv(ctx.settings),
    maxChars: 100,
  });
  t.is(result.output, "x".repeat(100));
  t.true(result.truncated);
  t.is(result.exitCode, 0);
});

test("a timeout kills the whole process group, grandchildren included", async (t) => {
  const ctx = await testToolContext();
  const pidFile = join(ctx.workspace.root, "pid");
  const result = await runShell(`sleep 30 & echo $! > ${pidFile}; wait`, {
    cwd: ctx.workspace.root,
    env: childEnv(ctx.settings),
    maxChars: 1000,
    timeoutMs: 300,
  });
  t.true(result.timedOut);
  t.is(result.exitCode, 137);
  const pid = Number((await readFile(pidFile, "utf8")).trim());
  t.true(await until(() => processGone(pid), `process ${pid} to end`));
});

test("an abort kills the child", async (t) => {
  const ctx = await testToolContext();
  const abort = new AbortController();
  const running = runShell("echo started; sleep 30", {
    cwd: ctx.workspace.root,
    env: childEnv(ctx.settings),
    maxChars: 1000,
    signal: abort.signal,
  });
  abort.abort();
  const result = await running;
  t.not(result.exitCode, 0);
  t.true(result.timedOut);
});

test("what a finished command leaves running in its group is ended", async (t) => {
  const ctx = await testToolContext();
  const result = await runShell("sleep 30 & echo $!", {
    cwd: ctx.workspace.root,
    env: childEnv(ctx.settings),
    maxChars: 1000,
    timeoutMs: 20_000,
  });
  t.false(result.timedOut);
  const pid = Number(result.output.trim());
  t.true(await until(() => processGone(pid), `process ${pid} to end`));
});

test("a tail buffer keeps the last characters and answers what is new since a mark", (t) => {
  const buffer = new OutputBuffer(5, "tail");
  buffer.append("abc");
  const mark = buffer.written;
  buffer.append("defg");
  t.is(buffer.output, "cdefg");
  t.deepEqual(buffer.since(mark), { text: "defg", lost: false });
  t.deepEqual(buffer.since(0), { text: "cdefg", lost: true });
  t.true(buffer.truncated);
});
