// schedule_job, list_jobs, get_job_status, cancel_job over agents_job. Every answer is the job
// record { id, name, status, nextRunAt, lastRun: { exitCode, output }, error }; the command passes
// the shell rules when scheduled (and again when it runs). cancel_job marks a job failed with error
// `cancelled` (a running one is killed by the instance running it).
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/core";
import { checkShellLine, shellRulesOf } from "../shell/rules.js";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { JobEntity, type JobRow } from "./job-table.js";
import { parseSchedule } from "./schedule.js";

export type JobRecord = {
  id: string;
  name: string;
  status: string;
  nextRunAt: string | null;
  lastRun: { exitCode: number | null; output: string } | null;
  error: string | null;
};

export function jobRecord(row: JobRow): JobRecord {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    nextRunAt: row.nextRunAt ? new Date(row.nextRunAt).toISOString() : null,
    lastRun: row.lastRunAt ? { exitCode: row.lastExitCode ?? null, output: row.lastOutput ?? "" } : null,
    error: row.error ?? null,
  };
}

function emOf(ctx: ToolContext): EntityManager {
  if (!ctx.services.em) throw new ToolError("scheduled jobs need the mesh database, which this context lacks");
  return ctx.services.em();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function jobOf(em: EntityManager, id: unknown): Promise<JobRow> {
  const row = typeof id === "string" && UUID.test(id) ? await em.findOne(JobEntity, { id }) : null;
  if (!row) throw new ToolError(`no job '${String(id)}'`);
  return row;
}

const idParameter = { id: { type: "string" as const, description: "The job id." } };
const STATUSES = ["pending", "running", "completed", "failed", "all"];

export const jobTools: ToolSpec[] = [
  {
    name: "schedule_job",
    description:
      "Schedule a shell command: once at an ISO 8601 datetime, or on a 5- or 6-field cron expression (recurring repeats it). Jobs persist across restarts.",
    tier: "X",
    parameters: {
      type: "object",
      properties: {
        name: { type: "string", description: "A name for the job." },
        command: { type: "string", description: "The shell line to run (like run_command)." },
        schedule: { type: "string", description: "ISO 8601 datetime, or a cron expression (5 fields, or 6 with seconds first)." },
        recurring: { type: "boolean", default: false, description: "Run on every match of the cron expression." },
        description: { type: "string", description: "What the job is for." },
      },
      required: ["name", "command", "schedule"],
    },
    async run(args, ctx) {
      const name = (args.name as string).trim();
      const command = args.command as string;
      if (name === "") throw new ToolError("name must not be empty");
      if (command.trim() === "") throw new ToolError("command must not be empty");
      const schedule = parseSchedule(args.schedule as string);
      const recurring = args.recurring === true;
      if (recurring && schedule.kind !== "cron") throw new ToolError("a recurring job needs a cron expression, not a datetime");
      checkShellLine(command, shellRulesOf(ctx.settings));
      const em = emOf(ctx);
      const row: JobRow = {
        id: randomUUID(),
        name,
        command,
        schedule: (args.schedule as string).trim(),
        recurring,
        description: (args.description as string | undefined) ?? null,
        status: "pending",
        nextRunAt: schedule.next(),
        agentId: ctx.agentId ?? null,
        createdAt: new Date(),
      };
      await em.insert(JobEntity, row);
      return jobRecord(row);
    },
  },
  {
    name: "list_jobs",
    description: "List scheduled jobs, optionally by status.",
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        status: { type: "string", enum: STATUSES, default: "all", description: "pending, running, completed, failed or all." },
      },
    },
    async run(args, ctx) {
      const status = (args.status as string | undefined) ?? "all";
      if (!STATUSES.includes(status)) throw new ToolError(`status must be one of ${STATUSES.join(", ")}`);
      const rows = await emOf(ctx).find(JobEntity, status === "all" ? {} : { status: status as JobRow["status"] }, {
        orderBy: { createdAt: "asc", id: "asc" },
      });
      return rows.map(jobRecord);
    },
  },
  {
    name: "get_job_status",
    description: "The record of one job: status, next run, last run's exit code and output, error.",
    tier: "A",
    parameters: { type: "object", properties: idParameter, required: ["id"] },
    async run(args, ctx) {
      return jobRecord(await jobOf(emOf(ctx), args.id));
    },
  },
  {
    name: "cancel_job",
    description: "Cancel a job: it is marked failed with error cancelled (a running one is killed).",
    tier: "C",
    parameters: { type: "object", properties: idParameter, required: ["id"] },
    async run(args, ctx) {
      const em = emOf(ctx);
      const row = await jobOf(em, args.id);
      if (row.status === "completed") throw new ToolError(`job '${row.id}' has already completed`);
      if (row.status === "failed" && row.error !== "cancelled") throw new ToolError(`job '${row.id}' has already failed`);
      await em.nativeUpdate(
        JobEntity,
        { id: row.id, status: { $in: ["pending", "running"] } },
        { status: "failed", error: "cancelled", nextRunAt: null },
      );
      return jobRecord(await jobOf(em.fork(), row.id));
    },
  },
];
