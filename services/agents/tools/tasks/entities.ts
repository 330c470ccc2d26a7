// agents_task as MikroORM sees it (migration agents-0006-memory-tasks). dueDate is a `date`
// column, read and written as `YYYY-MM-DD` text.
import { EntitySchema } from "@mikro-orm/core";

export const TASK_STATUSES = ["pending", "in_progress", "done", "blocked"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TASK_PRIORITIES = ["low", "medium", "high"] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

export interface TaskRow {
  id: string;
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: TaskPriority;
  owner: string | null;
  dueDate: string | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export const TaskEntity = new EntitySchema<TaskRow>({
  name: "AgentsTask",
  tableName: "agents_task",
  properties: {
    id: { type: "uuid", primary: true },
    title: { type: "text" },
    description: { type: "text", nullable: true },
    status: { type: "text" },
    priority: { type: "text" },
    owner: { type: "text", nullable: true },
    dueDate: { type: "string", columnType: "date", nullable: true },
    createdBy: { type: "text", nullable: true },
    createdAt: { ...timestamptz },
    updatedAt: { ...timestamptz },
  },
});
