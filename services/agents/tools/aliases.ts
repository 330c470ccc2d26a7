// The compatibility aliases: accepted, never advertised, resolved before the tier lookup.
// todo_write is the one alias with its own arguments: `{ todos: [{ id?, content, status }] }`
// creates (no id) and updates (id) tasks through create_task and update_task; `completed` is done.
import { ToolError, type ToolContext, type ToolParameters, type ToolSpec } from "./tool.js";

export const aliases: Readonly<Record<string, string>> = {
  bash: "run_command",
  read: "read_file",
  write: "write_file",
  edit: "edit_file",
  ls: "list_directory",
  webfetch: "web_fetch",
  websearch: "web_search",
  todo_read: "list_tasks",
  todo_write: "update_task",
};

export const todoWriteParameters: ToolParameters = {
  type: "object",
  properties: {
    todos: {
      type: "array",
      description: "The todo list: items without id are created, items with id updated.",
      items: {
        type: "object",
        properties: {
          id: { type: "string" },
          content: { type: "string" },
          status: { type: "string", enum: ["pending", "in_progress", "completed", "done", "blocked"] },
        },
        required: ["content", "status"],
      },
    },
  },
  required: ["todos"],
};

const statusOf = (status: string) => (status === "completed" ? "done" : status);

/** Runs todo_write through the catalogue's create_task and update_task; answers the tasks as they are after it. */
export async function runTodoWrite(args: Record<string, unknown>, ctx: ToolContext, resolve: (name: string) => ToolSpec | undefined) {
  const create = resolve("create_task");
  const update = resolve("update_task");
  if (!create || !update)
    throw new ToolError("todo_write needs the task tools (create_task, update_task), which are not in this catalogue");
  const results: unknown[] = [];
  for (const todo of args.todos as { id?: string; content: string; status: string }[]) {
    const status = statusOf(todo.status);
    if (todo.id) {
      results.push(asRecord(await update.run({ id: todo.id, title: todo.content, status }, ctx)));
      continue;
    }
    const created = asRecord(await create.run({ title: todo.content, priority: "medium" }, ctx));
    const id = typeof created === "object" && created !== null ? (created as { id?: unknown }).id : undefined;
    if (status !== "pending" && typeof id === "string") results.push(asRecord(await update.run({ id, status }, ctx)));
    else results.push(created);
  }
  return results;
}

function asRecord(result: unknown): unknown {
  if (typeof result !== "string") return result;
  try {
    return JSON.parse(result);
  } catch {
    return result;
  }
}
