// Reading and changing tasks for the task tools: the record they answer
// (`{ id, title, status, priority, owner, dueDate, description }`), the checks of a status, a
// priority and a due date (each an Error naming what is accepted), and the lookups by id.
import type { EntityManager } from "@mikro-orm/core";
import { ToolError } from "../tool.js";
import { TASK_PRIORITIES, TASK_STATUSES, TaskEntity, type TaskPriority, type TaskRow, type TaskStatus } from "./entities.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (text: string) => UUID.test(text);

export type TaskRecord = {
  id: string;
  title: string;
  status: TaskStatus;
  priority: TaskPriority;
  owner: string | null;
  dueDate: string | null;
  description: string | null;
};

export const record = (row: TaskRow): TaskRecord => ({
  id: row.id,
  title: row.title,
  status: row.status,
  priority: row.priority,
  owner: row.owner,
  dueDate: row.dueDate,
  description: row.description,
});

export function checkedStatus(value: unknown): TaskStatus {
  const status = String(value).trim().toLowerCase();
  if (!(TASK_STATUSES as readonly string[]).includes(status)) {
    throw new ToolError(`status must be one of ${TASK_STATUSES.join(", ")} (got '${String(value)}')`);
  }
  return status as TaskStatus;
}

export function checkedPriority(value: unknown): TaskPriority {
  const priority = String(value).trim().toLowerCase();
  if (!(TASK_PRIORITIES as readonly string[]).includes(priority)) {
    throw new ToolError(`priority must be one of ${TASK_PRIORITIES.join(", ")} (got '${String(value)}')`);
  }
  return priority as TaskPriority;
}

/** An ISO 8601 date (`2026-12-01`, or a date-time whose date part is taken) as `YYYY-MM-DD`. */
export function checkedDueDate(value: unknown): string {
  const text = String(value).trim();
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:$|T)/.exec(text);
  if (match) {
    const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
    if (!Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text.slice(0, 10)) {
      if (text.length === 10 || !Number.isNaN(Date.parse(text))) return text.slice(0, 10);
    }
  }
  throw new ToolError(`dueDate must be an ISO 8601 date such as 2026-12-31 (got '${text}')`);
}

export function checkedTitle(value: unknown): string {
  const title = String(value).trim();
  if (title === "") throw new ToolError("title must not be empty");
  return title;
}

/** The task with this id, or an Error naming it. */
export async function taskById(em: EntityManager, id: unknown): Promise<TaskRow> {
  const key = String(id).trim();
  const row = UUID.test(key) ? await em.findOne(TaskEntity, { id: key }) : null;
  if (!row) throw new ToolError(`no task with id '${key}'`);
  return row;
}

/** Today in UTC as `YYYY-MM-DD` (due dates are calendar dates). */
export const today = (now = new Date()) => now.toISOString().slice(0, 10);
