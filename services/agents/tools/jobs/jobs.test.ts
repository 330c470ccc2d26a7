// Scheduled jobs on the agents module's database: schedules (cron, ISO datetime, bad and past ones),
// records, cancel_job, the worker running due jobs like run_command, one instance per run with two
// workers on one database, and a recurring job that keeps running across a restart.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { realInfra } from "../../../../test/support/real-infra.js";
import { startTestMesh, type TestMesh } from "../../../../test/support/start-mesh.js";
import { createTestDatabaseUrl } from "../../../../test/support/test-database.js";
import { processGone } from "../../../../test/support/process-gone.js";
import { until } from "../../../../test/support/until.js";
import { agentsModule } from "../../index.js";
import { Workspace } from "../jail.js";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { jobsFamily } from "./index.js";
import type { JobRecord } from "./job-tools.js";
import { startJobWorker } from "./job-worker.js";

const silent = { warn() {}, info() {} };
const workspaceRoot = mkdtempSync(join(tmpdir(), "jobs-workspace-"));
const flags = [`--Tools:WorkspaceRoot=${workspaceRoot}`, "--Tools:Jobs:PollSeconds=1"];

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh({ modules: [agentsModule], flags });
});
test.after.always(async () => {
  await mesh?.close();
  rmSync(workspaceRoot, { recursive: true, force: true });
});

const contextOn = (on: TestMesh, settings = {}) =>
  testToolContext({ settings, services: { workspace: new Workspace(workspaceRoot), em: () => on.db!.em() } });
const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) =>
  toolNamed(jobsFamily, name).run(args, ctx) as unknown as Promise<JobRecord>;
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

test("schedule_job answers a pending record; bad and past schedules are Errors", async (t) => {
  const ctx = await contextOn(mesh);
  const job = await run("schedule_job", { name: "nightly", command: "echo hi", schedule: "0 3 * * *", recurring: true }, ctx);
  t.like(job, { name: "nightly", status: "pending", lastRun: null, error: null });
  t.true(new Date(job.nextRunAt as string).getTime() > Date.now());
  t.is(new Date(job.nextRunAt as string).getMinutes(), 0);
  const sixFields = await run("schedule_job", { name: "every 10 s", command: "true", schedule: "*/10 * * * * *" }, ctx);
  t.is(sixFields.status, "pending");
  const at = inSeconds(3600);
  t.is((await run("schedule_job", { name: "once", command: "true", schedule: at }, ctx)).nextRunAt, at);
  for (const schedule of ["not a schedule", "61 * * * *", "* * *", "2001-01-01T00:00:00Z"]) {
    await t.throwsAsync(run("schedule_job", { name: "bad", command: "true", schedule }, ctx), { instanceOf: ToolError }, schedule);
  }
  await t.throwsAsync(run("schedule_job", { name: "past", command: "true", schedule: "2001-01-01T00:00:00Z" }, ctx), {
    message: /is in the past/,
  });
  await t.throwsAsync(run("schedule_job", { name: "r", command: "true", schedule: at, recurring: true }, ctx), {
    message: /recurring job needs a cron expression/,
  });
  const denied = await contextOn(mesh, { shell: { deny: ["rm"], allow: [], passEnv: [] } });
  await t.throwsAsync(run("schedule_job", { name: "rm", command: "rm -rf x", schedule: "* * * * *" }, denied), {
    instanceOf: PolicyBlock,
    message: "'rm' is not allowed",
  });
});

test("a due job runs like run_command and completes; list_jobs filters by status", async (t) => {
  const ctx = await contextOn(mesh);
  const ok = await run("schedule_job", { name: "greet", command: "echo hello from $(pwd)", schedule: inSeconds(1) }, ctx);
  const bad = await run("schedule_job", { name: "fail", command: "echo oops; exit 3", schedule: inSeconds(1) }, ctx);
  const done = await until(async () => {
    const job = await run("get_job_status", { id: ok.id }, ctx);
    return job.status === "completed" && job;
  }, "the job to complete");
  t.deepEqual(done, {
    id: ok.id,
    name: "greet",
    status: "completed",
    nextRunAt: null,
    lastRun: { exitCode: 0, output: `hello from ${workspaceRoot}\n` },
    error: null,
  });
  const failed = await until(async () => {
    const job = await run("get_job_status", { id: bad.id }, ctx);
    return job.status === "failed" && job;
  }, "the job to fail");
  t.like(failed, { lastRun: { exitCode: 3, output: "oops\n" }, error: "exit code 3" });
  const completed = (await toolNamed(jobsFamily, "list_jobs").run({ status: "completed" }, ctx)) as JobRecord[];
  t.true(completed.some((j) => j.id === ok.id));
  t.false(completed.some((j) => j.id === bad.id));
  const all = (await toolNamed(jobsFamily, "list_jobs").run({}, ctx)) as JobRecord[];
  t.true(all.some((j) => j.id === bad.id) && all.some((j) => j.id === ok.id));
});

test("cancel_job marks a job failed with error cancelled; unknown ids are Errors", async (t) => {
  const ctx = await contextOn(mesh);
  const job = await run("schedule_job", { name: "later", command: "true", schedule: "0 0 1 1 *" }, ctx);
  const cancelled = await run("cancel_job", { id: job.id }, ctx);
  t.like(cancelled, { id: job.id, status: "failed", error: "cancelled", nextRunAt: null });
  t.like(await run("get_job_status", { id: job.id }, ctx), { status: "failed", error: "cancelled" });
  await t.throwsAsync(run("get_job_status", { id: "not-a-uuid" }, ctx), { instanceOf: ToolError, message: "no job 'not-a-uuid'" });
  await t.throwsAsync(run("cancel_job", { id: "00000000-0000-4000-8000-000000000000" }, ctx), { instanceOf: ToolError, message: /no job/ });
});

test("cancel_job kills a running job", async (t) => {
  const ctx = await contextOn(mesh);
  const job = await run("schedule_job", { name: "long", command: "sleep 60 & echo $! > long.pid; wait", schedule: inSeconds(1) }, ctx);
  const pid = await until(async () => {
    const state = await run("get_job_status", { id: job.id }, ctx);
    const written = state.status === "running" && readFileSync(join(workspaceRoot, "long.pid"), { encoding: "utf8", flag: "a+" }).trim();
    return written ? Number(written) : undefined;
  }, "the job to start");
  t.like(await run("cancel_job", { id: job.id }, ctx), { status: "failed", error: "cancelled" });
  await until(() => processGone(pid), "the job's command to be killed");
  t.like(await run("get_job_status", { id: job.id }, ctx), { status: "failed", error: "cancelled", lastRun: null });
});

test("two workers on one database run each due job once", async (t) => {
  const ctx = await contextOn(mesh);
  const settings = { ...ctx.settings, jobs: { pollSeconds: 1, timeoutSeconds: 60 } };
  const workspace = new Workspace(workspaceRoot);
  const workers = [1, 2].map(() => startJobWorker({ db: mesh.db!, settings, workspace, logger: silent }));
  t.teardown(() => Promise.all(workers.map((w) => w.stop())));
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) {
    ids.push((await run("schedule_job", { name: `once-${i}`, command: `echo run >> once-${i}.log`, schedule: inSeconds(1) }, ctx)).id);
  }
  await until(async () => {
    const states = await Promise.all(ids.map((id) => run("get_job_status", { id }, ctx)));
    return states.every((s) => s.status === "completed");
  }, "every job to complete");
  for (let i = 0; i < 8; i++) t.is(readFileSync(join(workspaceRoot, `once-${i}.log`), "utf8"), "run\n", `job ${i} ran once`);
});

test("a run whose claim another instance took over is stopped and records nothing", async (t) => {
  const ctx = await contextOn(mesh);
  const job = await run("schedule_job", { name: "taken", command: "sleep 60 & echo $! > taken.pid; wait", schedule: inSeconds(1) }, ctx);
  const pid = await until(async () => {
    const state = await run("get_job_status", { id: job.id }, ctx);
    const written = state.status === "running" && readFileSync(join(workspaceRoot, "taken.pid"), { encoding: "utf8", flag: "a+" }).trim();
    return written ? Number(written) : undefined;
  }, "the job to start");
  // What a second instance does when it claims a run it thinks is stale: a new claimed_at.
  const takenAt = new Date(Date.now() + 60_000);
  await mesh.db!.em().execute(`update "agents_job" set "claimed_at" = ? where "id" = ?`, [takenAt, job.id]);
  await until(() => processGone(pid), "the first run to be stopped");
  const [row] = await mesh
    .db!.em()
    .execute<{ status: string; last_run_at: Date | null; claimed_at: Date }[]>(
      `select "status", "last_run_at", "claimed_at" from "agents_job" where "id" = ?`,
      [job.id],
    );
  t.is(row!.status, "running", "still the other instance's run");
  t.is(row!.last_run_at, null, "the stopped run recorded nothing");
  t.is(new Date(row!.claimed_at).getTime(), takenAt.getTime());
  await mesh.db!.em().execute(`update "agents_job" set "status" = 'failed', "claimed_at" = null where "id" = ?`, [job.id]);
});

test("a recurring job returns to pending after each run and keeps running across a restart", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "jobs-restart-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const first = await startTestMesh({ dataDir, databaseUrl: db?.url, modules: [agentsModule], flags });
  const firstCtx = await contextOn(first);
  const job = await run("schedule_job", { name: "tick", command: "date +%s%N", schedule: "* * * * * *", recurring: true }, firstCtx);
  const before = await until(async () => {
    const state = await run("get_job_status", { id: job.id }, firstCtx);
    return state.lastRun !== null && state.status === "pending" && state;
  }, "a first run");
  t.is(before.lastRun?.exitCode, 0);
  t.is(before.error, null);
  t.true(new Date(before.nextRunAt as string).getTime() > Date.now() - 2000);
  await first.close();

  const second = await startTestMesh({ dataDir, databaseUrl: db?.url, modules: [agentsModule], flags });
  t.teardown(() => second.close());
  const secondCtx = await contextOn(second);
  const after = await until(async () => {
    const state = await run("get_job_status", { id: job.id }, secondCtx);
    return state.lastRun !== null && state.lastRun.output !== before.lastRun?.output && state;
  }, "a run after the restart");
  t.is(after.lastRun?.exitCode, 0);
  t.true(Number(after.lastRun?.output.trim()) > Number(before.lastRun?.output.trim()));
  await run("cancel_job", { id: job.id }, secondCtx);
});
