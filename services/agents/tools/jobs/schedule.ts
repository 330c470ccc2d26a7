// A job's schedule: an ISO 8601 datetime (one run, not in the past) or a 5- or 6-field cron
// expression (croner; seconds first when 6), answering the next run.
import { Cron } from "croner";
import { ToolError } from "../tool.js";

const ISO = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export interface Schedule {
  kind: "datetime" | "cron";
  /** The next run after `from`; null when there is none. */
  next(from?: Date): Date | null;
}

export function parseSchedule(text: string, now = new Date()): Schedule {
  const trimmed = text.trim();
  if (ISO.test(trimmed)) {
    const at = new Date(trimmed);
    if (Number.isNaN(at.getTime())) throw new ToolError(`schedule '${text}' is not a valid ISO 8601 datetime`);
    if (at.getTime() <= now.getTime()) throw new ToolError(`schedule '${text}' is in the past`);
    return { kind: "datetime", next: (from = now) => (at.getTime() > from.getTime() ? at : null) };
  }
  const fields = trimmed.split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    throw new ToolError(`schedule '${text}' is neither an ISO 8601 datetime nor a 5- or 6-field cron expression`);
  let cron: Cron;
  try {
    cron = new Cron(trimmed, { paused: true });
  } catch (error) {
    throw new ToolError(`schedule '${text}' is not a valid cron expression: ${(error as Error).message}`);
  }
  if (cron.nextRun(now) === null) throw new ToolError(`schedule '${text}' never runs`);
  return { kind: "cron", next: (from = now) => cron.nextRun(from) };
}
