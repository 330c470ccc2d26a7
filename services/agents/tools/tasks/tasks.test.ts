// Task tools on the mesh database (PGlite here, real PostgreSQL when DATABASE_URL is set): the
// record, the statuses, assignment, due dates, the summary, export and todo_write.
import test from "ava";
import { type ToolDatabase, openToolDatabase } from "../testing-database.js";
import { toolNamed } from "../testing.js";
import { ToolError } from "../tool.js";
import { taskTools } from "./index.js";
import type { TaskRecord } from "./store.js";

let database: ToolDatabase;
test.before(async () => {
  database = await openToolDatabase("tasks");
});
test.after.always(() => database?.close());

const tool = (name: string) => toolNamed(taskTools, name);
const call = async (name: string, args: Record<string, unknown>) => tool(name).run(args, await database.context());
const create = async (title: string, extra: Record<string, unknown> = {}) =>
  (await call("create_task", { title, priority: "medium", ...extra })) as TaskRecord;
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const STATUS_ERROR = "status must be one of pending, in_progress, done, blocked";

test.serial(
  "create_task answers the record, pending, medium by default; the task changes through update, complete, assign and due date",
  async (t) => {
    const task = await create("Write the release notes", { description: "for 2.0" });
    t.deepEqual(task, {
      id: task.id,
      title: "Write the release notes",
      status: "pending",
      priority: "medium",
      owner: null,
      dueDate: null,
      description: "for 2.0",
    });
    t.is((await create("Urgent fix", { priority: "high" })).priority, "high");

    t.like(await call("update_task", { id: task.id, status: "in_progress", title: "Write the 2.0 release notes" }), {
      status: "in_progress",
      title: "Write the 2.0 release notes",
      description: "for 2.0",
    });
    t.like(await call("assign_task", { id: task.id, owner: "alice" }), { owner: "alice" });
    t.like(await call("set_due_date", { id: task.id, dueDate: "2031-02-28" }), { dueDate: "2031-02-28" });
    t.like(await call("set_due_date", { id: task.id, dueDate: "2031-03-01T10:00:00Z" }), { dueDate: "2031-03-01" });
    t.like(await call("complete_task", { id: task.id }), { id: task.id, status: "done", owner: "alice", dueDate: "2031-03-01" });
  },
);

test.serial("list_tasks and list_assigned_tasks filter by status and owner, oldest first", async (t) => {
  const owner = `owner-${Date.now()}`;
  const first = await create("first of owner");
  const second = await create("second of owner");
  const third = await create("third of owner");
  for (const task of [first, second, third]) await call("assign_task", { id: task.id, owner });
  await call("update_task", { id: second.id, status: "blocked" });
  const titles = (tasks: unknown) => (tasks as TaskRecord[]).map((task) => task.title);
  t.deepEqual(titles(await call("list_assigned_tasks", { owner })), ["first of owner", "second of owner", "third of owner"]);
  t.deepEqual(titles(await call("list_assigned_tasks", { owner, status: "blocked" })), ["second of owner"]);
  t.deepEqual(titles(await call("list_assigned_tasks", { owner: "nobody" })), []);
  const blocked = (await call("list_tasks", { status: "blocked" })) as TaskRecord[];
  t.true(blocked.every((task) => task.status === "blocked"));
  t.true(blocked.some((task) => task.id === second.id));
  t.true(((await call("list_tasks", {})) as TaskRecord[]).length >= 3);
});

test.serial("get_task_summary counts by status and lists overdue and upcoming open tasks by due date", async (t) => {
  const before = (await call("get_task_summary", {})) as {
    byStatus: Record<string, number>;
    overdue: TaskRecord[];
    upcoming: TaskRecord[];
  };
  const late = await create("late one");
  await call("set_due_date", { id: late.id, dueDate: day(-3) });
  const lateDone = await create("late but done");
  await call("set_due_date", { id: lateDone.id, dueDate: day(-2) });
  await call("complete_task", { id: lateDone.id });
  const soon = await create("soon one");
  await call("set_due_date", { id: soon.id, dueDate: day(2) });
  const today = await create("today one");
  await call("set_due_date", { id: today.id, dueDate: day(0) });
  const far = await create("far one");
  await call("set_due_date", { id: far.id, dueDate: day(60) });

  const summary = (await call("get_task_summary", {})) as typeof before;
  t.deepEqual(Object.keys(summary.byStatus), ["pending", "in_progress", "done", "blocked"]);
  t.is(summary.byStatus.pending, before.byStatus.pending! + 4);
  t.is(summary.byStatus.done, before.byStatus.done! + 1);
  t.deepEqual(
    summary.overdue.map((task) => task.id),
    [...before.overdue.map((task) => task.id), late.id],
  );
  const upcoming = summary.upcoming.filter((task) => [soon.id, today.id, far.id].includes(task.id));
  t.deepEqual(
    upcoming.map((task) => task.id),
    [today.id, soon.id],
  );
});

test.serial("export_tasks answers every task as JSON", async (t) => {
  const task = await create("exported one");
  const exported = (await call("export_tasks", {})) as { exportedAt: string; count: number; tasks: TaskRecord[] };
  t.is(exported.count, exported.tasks.length);
  t.deepEqual(
    exported.tasks.find((x) => x.id === task.id),
    task,
  );
  t.false(Number.isNaN(Date.parse(exported.exportedAt)));
});

test("the errors: a status outside the four lists them; unknown id, bad date, bad priority, empty title or owner", async (t) => {
  const task = await create("for errors");
  for (const [name, args] of [
    ["list_tasks", { status: "finished" }],
    ["update_task", { id: task.id, status: "completed" }],
    ["list_assigned_tasks", { owner: "a", status: "open" }],
  ] as const) {
    await t.throwsAsync(call(name, args), { instanceOf: ToolError, message: new RegExp(`^${STATUS_ERROR}`) }, name);
  }
  const unknown = "00000000-0000-4000-8000-000000000000";
  for (const name of ["update_task", "complete_task"]) {
    await t.throwsAsync(call(name, { id: unknown }), { instanceOf: ToolError, message: `no task with id '${unknown}'` });
  }
  await t.throwsAsync(call("assign_task", { id: "nope", owner: "a" }), { instanceOf: ToolError, message: "no task with id 'nope'" });
  for (const dueDate of ["tomorrow", "2026-02-30", "31/12/2026", "2026-13-01"]) {
    await t.throwsAsync(call("set_due_date", { id: task.id, dueDate }), { instanceOf: ToolError, message: /ISO 8601 date/ }, dueDate);
  }
  await t.throwsAsync(call("create_task", { title: "x", priority: "urgent" }), { instanceOf: ToolError, message: /low, medium, high/ });
  await t.throwsAsync(call("create_task", { title: " " }), { instanceOf: ToolError, message: /title must not be empty/ });
  await t.throwsAsync(call("assign_task", { id: task.id, owner: "" }), { instanceOf: ToolError, message: /owner must not be empty/ });
  t.like(await call("update_task", { id: task.id }), { status: "pending", title: "for errors" }, "nothing asked, nothing changed");
});
