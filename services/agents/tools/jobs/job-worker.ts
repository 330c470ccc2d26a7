// The jobs worker of an agent gateway instance: every Tools:Jobs:PollSeconds it claims due jobs one
// at a time (FOR UPDATE SKIP LOCKED, so each run belongs to one instance), runs the command like
// run_command (shell rules, the workspace, the runner, Tools:Jobs:TimeoutSeconds), and records the
// run: a recurring job returns to pending with its next run, another ends completed (exit 0) or
// failed. A job cancelled while running is killed. A job left running by a dead instance is
// claimed again once it is well past the timeout; at stop, this instance's running job is killed
// and handed back as pending. A claim is owned by its claimed_at: a run whose claim was taken
// over (or handed back) is stopped by its watch and records nothing, so a run is recorded once.
import type { Logger } from "pino";
import type { Database } from "../../../runtime/database/index.js";
import { childEnv, runShell } from "../process/runner.js";
import { checkShellLine, shellRulesOf } from "../shell/rules.js";
import type { Workspace } from "../jail.js";
import type { ToolSettings } from "../tool.js";
import { JOB_TABLE } from "./job-table.js";
import { parseSchedule } from "./schedule.js";

export interface JobWorkerDeps {
  db: Pick<Database, "em">;
  settings: ToolSettings;
  workspace: Workspace;
  logger: Pick<Logger, "warn" | "info">;
}

interface Claimed {
  id: string;
  /** This claim's claimed_at: the run's ownership of the row. */
  claimedAt: Date;
  name: string;
  command: string;
  schedule: string;
  recurring: boolean;
}

export interface JobWorker {
  name: string;
  /** Claims and runs every due job now (tests, and the poll loop). */
  runDue(): Promise<number>;
  stop(): Promise<void>;
}

export function startJobWorker(deps: JobWorkerDeps): JobWorker {
  const jobs = (deps.settings.jobs ?? {}) as { pollSeconds?: number; timeoutSeconds?: number };
  const pollMs = (jobs.pollSeconds ?? 5) * 1000;
  const timeoutMs = (jobs.timeoutSeconds ?? 3600) * 1000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: { id: string; claimedAt: Date; abort: AbortController } | undefined;
  let loop: Promise<number> = Promise.resolve(0);

  async function claim(): Promise<Claimed | undefined> {
    const now = new Date();
    const stale = new Date(now.getTime() - timeoutMs - 60_000);
    const rows = await deps.db.em().execute<Claimed[]>(
      `update "${JOB_TABLE}" set "status" = 'running', "claimed_at" = ?
        where "id" = (select "id" from "${JOB_TABLE}"
                       where ("status" = 'pending' and "next_run_at" <= ?) or ("status" = 'running' and "claimed_at" < ?)
                       order by "next_run_at" limit 1 for update skip locked)
      returning "id", "name", "command", "schedule", "recurring"`,
      [now, now, stale],
    );
    return rows[0] && { ...rows[0], claimedAt: now };
  }

  async function runOne(job: Claimed): Promise<void> {
    const abort = new AbortController();
    current = { id: job.id, claimedAt: job.claimedAt, abort };
    // Cancelled (no longer running) or claimed by another instance: stop.
    const watch = setInterval(() => {
      void deps.db
        .em()
        .execute<{ owned: boolean }[]>(`select ("status" = 'running' and "claimed_at" = ?) as "owned" from "${JOB_TABLE}" where "id" = ?`, [
          job.claimedAt,
          job.id,
        ])
        .then((rows) => rows[0]?.owned !== true && abort.abort())
        .catch(() => {});
    }, pollMs);
    let exitCode: number | null = null;
    let output = "";
    let error: string | null = null;
    try {
      checkShellLine(job.command, shellRulesOf(deps.settings));
      const result = await runShell(job.command, {
        cwd: deps.workspace.root,
        env: childEnv(deps.settings),
        maxChars: deps.settings.maxOutputChars,
        timeoutMs,
        signal: abort.signal,
      });
      exitCode = result.exitCode;
      output = result.output;
      if (result.timedOut) error = abort.signal.aborted ? "cancelled" : "timed out";
      else if (result.exitCode !== 0) error = `exit code ${result.exitCode}`;
    } catch (failure) {
      error = failure instanceof Error && failure.name === "PolicyBlock" ? `Blocked by policy: ${failure.message}` : String(failure);
    } finally {
      clearInterval(watch);
      current = undefined;
    }
    if (stopped && abort.signal.aborted) return;
    let next: Date | null = null;
    if (job.recurring) {
      try {
        next = parseSchedule(job.schedule, new Date(0)).next(new Date());
      } catch {
        next = null;
      }
    }
    const status = next ? "pending" : error ? "failed" : "completed";
    await deps.db.em().execute(
      `update "${JOB_TABLE}" set "status" = ?, "next_run_at" = ?, "last_exit_code" = ?, "last_output" = ?, "last_run_at" = ?, "error" = ?, "claimed_at" = null
          where "id" = ? and "status" = 'running' and "claimed_at" = ?`,
      [status, next, exitCode, output, new Date(), next ? null : error, job.id, job.claimedAt],
    );
  }

  async function runDue(): Promise<number> {
    let ran = 0;
    while (!stopped) {
      const job = await claim();
      if (!job) break;
      await runOne(job);
      ran++;
    }
    return ran;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      loop = runDue()
        .catch((error: unknown) => {
          deps.logger.warn({ err: error }, "scheduled jobs: a poll failed");
          return 0;
        })
        .finally(schedule);
    }, pollMs);
    timer.unref();
  }
  schedule();

  return {
    name: "scheduled jobs",
    runDue,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const running = current;
      running?.abort.abort();
      await loop;
      if (running) {
        // Handed back: another instance (or the next start) runs it again.
        await deps.db
          .em()
          .execute(
            `update "${JOB_TABLE}" set "status" = 'pending', "claimed_at" = null where "id" = ? and "status" = 'running' and "claimed_at" = ?`,
            [running.id, running.claimedAt],
          )
          .catch(() => {});
      }
    },
  };
}
