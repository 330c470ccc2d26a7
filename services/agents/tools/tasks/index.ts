// Task tools: tasks shared by every agent and instance, kept in the mesh database. A new task is
// pending; statuses are pending, in_progress, done and blocked (another is an Error listing them).
// Records are `{ id, title, status, priority, owner, dueDate, description }`.
// The todo_write alias runs through create_task and update_task (aliases.ts).
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/core";
import { entityManager } from "../memory/index.js";
import type { ToolContext, ToolSpec } from "../tool.js";
import { ToolError } from "../tool.js";
import { TASK_PRIORITIES, TASK_STATUSES, TaskEntity, type TaskRow, type TaskStatus } from "./entities.js";
import { checkedDueDate, checkedPriority, checkedStatus, checkedTitle, record, type TaskRecord, taskById, today } from "./store.js";

/** get_task_summary's `upcoming`: open tasks due from today to this many days ahead. */
export const UPCOMING_DAYS = 7;

const str = (description: string) => ({ type: "string" as const, description });
const statusParam = { type: "string" as const, enum: [...TASK_STATUSES], description: `One of ${TASK_STATUSES.join(", ")}.` };
const order = { createdAt: "asc", id: "asc" } as const;

async function list(em: EntityManager, where: { status?: TaskStatus; owner?: string }): Promise<TaskRecord[]> {
  return (await em.find(TaskEntity, where, { orderBy: order })).map(record);
}

async function change(ctx: ToolContext, id: unknown, apply: (row: TaskRow) => void): Promise<TaskRecord> {
  const em = entityManager(ctx);
  const row = await taskById(em, id);
  apply(row);
  row.updatedAt = new Date();
  await em.flush();
  return record(row);
}

function newTask(em: EntityManager, ctx: ToolContext, fields: Partial<TaskRow> & { title: string }): TaskRow {
  const now = new Date();
  return em.create(TaskEntity, {
    id: randomUUID(),
    description: null,
    status: "pending",
    priority: "medium",
    owner: null,
    dueDate: null,
    createdBy: ctx.agentId ?? null,
    createdAt: now,
    updatedAt: now,
    ...fields,
  });
}

export const taskTools: ToolSpec[] = [
  {
    name: "create_task",
    description: "Create a task (status pending); answers its record.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        title: str("The task's title."),
        description: str("What the task is about."),
        priority: { type: "string", enum: [...TASK_PRIORITIES], default: "medium", description: "low, medium or high." },
      },
      required: ["title"],
    },
    async run(args, ctx) {
      const em = entityManager(ctx);
      const row = newTask(em, ctx, {
        title: checkedTitle(args.title),
        description: typeof args.description === "string" && args.description !== "" ? args.description : null,
        priority: checkedPriority(args.priority ?? "medium"),
      });
      await em.flush();
      return record(row);
    },
  },
  {
    name: "list_tasks",
    description: "List tasks, oldest first, optionally of one status.",
    tier: "A",
    parameters: { type: "object", properties: { status: statusParam } },
    async run(args, ctx) {
      return list(entityManager(ctx), args.status === undefined ? {} : { status: checkedStatus(args.status) });
    },
  },
  {
    name: "update_task",
    description: "Change a task's status, title or description; answers its record.",
    tier: "C",
    parameters: {
      type: "object",
      properties: { id: str("The task's id."), status: statusParam, title: str("A new title."), description: str("A new description.") },
      required: ["id"],
    },
    async run(args, ctx) {
      const status = args.status === undefined ? undefined : checkedStatus(args.status);
      const title = args.title === undefined ? undefined : checkedTitle(args.title);
      return change(ctx, args.id, (row) => {
        if (status) row.status = status;
        if (title) row.title = title;
        if (typeof args.description === "string") row.description = args.description === "" ? null : args.description;
      });
    },
  },
  {
    name: "complete_task",
    description: "Mark a task done; answers its record.",
    tier: "C",
    parameters: { type: "object", properties: { id: str("The task's id.") }, required: ["id"] },
    async run(args, ctx) {
      return change(ctx, args.id, (row) => {
        row.status = "done";
      });
    },
  },
  {
    name: "export_tasks",
    description: "Export every task as JSON.",
    tier: "A",
    parameters: { type: "object", properties: {} },
    async run(_args, ctx) {
      const tasks = await list(entityManager(ctx), {});
      return { exportedAt: new Date().toISOString(), count: tasks.length, tasks };
    },
  },
  {
    name: "assign_task",
    description: "Give a task an owner; answers its record.",
    tier: "C",
    parameters: { type: "object", properties: { id: str("The task's id."), owner: str("Who owns it.") }, required: ["id", "owner"] },
    async run(args, ctx) {
      const owner = String(args.owner).trim();
      if (owner === "") throw new ToolError("owner must not be empty");
      return change(ctx, args.id, (row) => {
        row.owner = owner;
      });
    },
  },
  {
    name: "set_due_date",
    description: "Set a task's due date (ISO 8601 date); answers its record.",
    tier: "C",
    parameters: {
      type: "object",
      properties: { id: str("The task's id."), dueDate: str("An ISO 8601 date, e.g. 2026-12-31.") },
      required: ["id", "dueDate"],
    },
    async run(args, ctx) {
      const dueDate = checkedDueDate(args.dueDate);
      return change(ctx, args.id, (row) => {
        row.dueDate = dueDate;
      });
    },
  },
  {
    name: "list_assigned_tasks",
    description: "List the tasks of an owner, optionally of one status.",
    tier: "A",
    parameters: { type: "object", properties: { owner: str("The owner."), status: statusParam }, required: ["owner"] },
    async run(args, ctx) {
      const owner = String(args.owner).trim();
      return list(entityManager(ctx), { owner, ...(args.status === undefined ? {} : { status: checkedStatus(args.status) }) });
    },
  },
  {
    name: "get_task_summary",
    description: `Count tasks by status, and list the overdue open tasks and those due in the next ${UPCOMING_DAYS} days.`,
    tier: "A",
    parameters: { type: "object", properties: {} },
    async run(_args, ctx) {
      const tasks = await list(entityManager(ctx), {});
      const byStatus = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
      for (const task of tasks) byStatus[task.status]++;
      const now = today();
      const horizon = today(new Date(Date.now() + UPCOMING_DAYS * 86_400_000));
      const open = tasks.filter((task) => task.status !== "done" && task.dueDate !== null);
      const byDue = (a: TaskRecord, b: TaskRecord) => a.dueDate!.localeCompare(b.dueDate!);
      return {
        byStatus,
        overdue: open.filter((task) => task.dueDate! < now).sort(byDue),
        upcoming: open.filter((task) => task.dueDate! >= now && task.dueDate! <= horizon).sort(byDue),
      };
    },
  },
];
