// The jobs family (schedule_job, list_jobs, get_job_status, cancel_job) and what it adds to the
// agents module: the agents_job table and its migration, and the worker that runs due jobs.
import { Workspace } from "../jail.js";
import { type ToolsSettings, toolSettingsOf } from "../settings.js";
import type { Database } from "../../../runtime/database/index.js";
import { AgentsJobs0007, JobEntity } from "./job-table.js";
import { jobTools } from "./job-tools.js";
import { type JobWorker, startJobWorker } from "./job-worker.js";

export const jobsFamily = jobTools;

export const jobsParts = {
  entities: [JobEntity],
  migrations: [{ name: "agents-0007-jobs", class: AgentsJobs0007 }],
  async start(deps: {
    db: Database;
    tools: ToolsSettings;
    dataDir: string;
    logger: Parameters<typeof startJobWorker>[0]["logger"];
  }): Promise<JobWorker> {
    const settings = toolSettingsOf(deps.tools, deps.dataDir);
    const workspace = await Workspace.open(settings.workspaceRoot);
    return startJobWorker({ db: deps.db, settings: { ...settings, workspaceRoot: workspace.root }, workspace, logger: deps.logger });
  },
};
