// agents_job: the scheduled jobs of schedule_job, in the mesh database (shared by every agent and
// instance, kept across restarts). A job is pending until due, running while one instance runs
// it, then completed or failed; a recurring job returns to pending with its next run. claimed_at
// tells a job abandoned by a dead instance (running far past the job timeout) from a live one.
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export const JOB_TABLE = "agents_job";

export type JobStatus = "pending" | "running" | "completed" | "failed";

export interface JobRow {
  id: string;
  name: string;
  command: string;
  /** As given: an ISO 8601 datetime or a 5- or 6-field cron expression. */
  schedule: string;
  recurring: boolean;
  description?: string | null;
  status: JobStatus;
  nextRunAt?: Date | null;
  lastExitCode?: number | null;
  lastOutput?: string | null;
  lastRunAt?: Date | null;
  error?: string | null;
  agentId?: string | null;
  createdAt: Date;
  claimedAt?: Date | null;
}

export const JobEntity = new EntitySchema<JobRow>({
  name: "AgentsJob",
  tableName: JOB_TABLE,
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text" },
    command: { type: "text" },
    schedule: { type: "text" },
    recurring: { type: "boolean" },
    description: { type: "text", nullable: true },
    status: { type: "text" },
    nextRunAt: { type: "datetime", columnType: "timestamptz", nullable: true },
    lastExitCode: { type: "integer", nullable: true },
    lastOutput: { type: "text", nullable: true },
    lastRunAt: { type: "datetime", columnType: "timestamptz", nullable: true },
    error: { type: "text", nullable: true },
    agentId: { type: "text", nullable: true },
    createdAt: { type: "datetime", columnType: "timestamptz" },
    claimedAt: { type: "datetime", columnType: "timestamptz", nullable: true },
  },
});

export class AgentsJobs0007 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "${JOB_TABLE}" (
      "id" uuid primary key,
      "name" text not null,
      "command" text not null,
      "schedule" text not null,
      "recurring" boolean not null,
      "description" text null,
      "status" text not null,
      "next_run_at" timestamptz null,
      "last_exit_code" integer null,
      "last_output" text null,
      "last_run_at" timestamptz null,
      "error" text null,
      "agent_id" text null,
      "created_at" timestamptz not null,
      "claimed_at" timestamptz null
    )`);
    this.addSql(`create index "agents_job_due_idx" on "${JOB_TABLE}" ("status", "next_run_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "${JOB_TABLE}"`);
  }
}
