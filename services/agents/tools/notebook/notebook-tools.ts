// notebook_open, notebook_run_cell, notebook_run_all, notebook_get_vars, notebook_export. An agent
// (else its session) has one open notebook at a time; its kernel (kernel.ts) keeps state across
// cells. Each run stores the cell's outputs and execution count in the notebook file (nbformat 4,
// written atomically).
import { stat } from "node:fs/promises";
import { dirname } from "node:path";
import { writeAtomic } from "../files/atomic.js";
import { childEnv } from "../process/runner.js";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { Kernel, kernelFor } from "./kernel.js";
import { type Cell, lines, type Notebook, notebookHtml, outputText, readNotebook, saveNotebook, sourceOf } from "./notebook-file.js";

interface Open {
  path: string;
  shown: string;
}

/** The open notebook of each agent (else session). */
const opened = new Map<string, Open>();

const ownerOf = (ctx: ToolContext) => ctx.agentId ?? ctx.sessionId ?? "";

function current(ctx: ToolContext): Open {
  const open = opened.get(ownerOf(ctx));
  if (!open) throw new ToolError("no notebook is open; call notebook_open first");
  return open;
}

function kernelOf(ctx: ToolContext, open: Open): Kernel {
  return kernelFor(
    `${ownerOf(ctx)}\u0000${open.path}`,
    () => new Kernel(dirname(open.path), childEnv(ctx.settings), ctx.settings.maxOutputChars),
  );
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

const secondsOf = (args: Record<string, unknown>, ctx: ToolContext) =>
  ctx.timeoutMs !== undefined && ctx.timeoutMs > 0 ? ctx.timeoutMs : ((args.timeoutSeconds as number | undefined) ?? 30) * 1000;

/** Runs one code cell in the kernel and stores its outputs in the cell; answers whether it failed. */
async function runCell(ctx: ToolContext, open: Open, cell: Cell, timeoutMs: number): Promise<{ failed: boolean; output: string }> {
  let answer: Record<string, unknown>;
  try {
    answer = await kernelOf(ctx, open).request({ op: "exec", code: sourceOf(cell) }, timeoutMs);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    cell.outputs = [{ output_type: "error", ename: "KernelError", evalue: error.message, traceback: [] }];
    cell.execution_count = null;
    return { failed: true, output: `KernelError: ${error.message}\n` };
  }
  const outputs = (answer.outputs as Record<string, unknown>[]).map((output) =>
    output.output_type === "stream" ? { ...output, text: lines(capped(output.text as string, ctx.settings.maxOutputChars)) } : output,
  );
  cell.outputs = outputs;
  cell.execution_count = answer.count as number;
  return { failed: outputs.some((o) => o.output_type === "error"), output: outputText(outputs) };
}

function capped(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[output truncated at ${max} characters]\n`;
}

function newCodeCell(code: string): Cell {
  return { cell_type: "code", source: lines(code), metadata: {}, outputs: [], execution_count: null };
}

export const notebookTools: ToolSpec[] = [
  {
    name: "notebook_open",
    description: "Open (or create) a Jupyter notebook (.ipynb) of the workspace with a python3 kernel that keeps state across cells.",
    tier: "A",
    parameters: { type: "object", properties: { path: { type: "string", description: "The .ipynb file." } }, required: ["path"] },
    async run(args, ctx) {
      const given = args.path as string;
      if (!given.endsWith(".ipynb")) throw new ToolError("path must end with .ipynb");
      const path = ctx.services.workspace.resolve(given);
      const shown = ctx.services.workspace.display(path);
      const notebook = await readNotebook(path, shown);
      if (!(await exists(path))) await saveNotebook(path, notebook);
      const open = { path, shown };
      opened.set(ownerOf(ctx), open);
      kernelOf(ctx, open);
      return {
        path: shown,
        cells: notebook.cells.map((cell, index) => ({ index, type: cell.cell_type, source: sourceOf(cell) })),
      };
    },
  },
  {
    name: "notebook_run_cell",
    description:
      "Run one cell of the open notebook (code replaces the cell's source; index = cell count appends a new cell) and save its outputs.",
    tier: "X",
    parameters: {
      type: "object",
      properties: {
        index: { type: "integer", minimum: 0, description: "The cell, 0-based." },
        code: { type: "string", description: "New source for the cell." },
        timeoutSeconds: { type: "integer", minimum: 1, default: 30, description: "The kernel is stopped past this." },
      },
      required: ["index"],
    },
    async run(args, ctx) {
      const open = current(ctx);
      const notebook = await readNotebook(open.path, open.shown);
      const index = args.index as number;
      const code = args.code as string | undefined;
      if (index === notebook.cells.length && code !== undefined) notebook.cells.push(newCodeCell(code));
      const cell = notebook.cells[index];
      if (!cell) throw new ToolError(`no cell ${index}: the notebook has ${notebook.cells.length} cells`);
      if (cell.cell_type !== "code") throw new ToolError(`cell ${index} is a ${cell.cell_type} cell`);
      if (code !== undefined) cell.source = lines(code);
      const result = await runCell(ctx, open, cell, secondsOf(args, ctx));
      await saveNotebook(open.path, notebook);
      return { index, executionCount: cell.execution_count ?? null, status: result.failed ? "error" : "ok", output: result.output };
    },
  },
  {
    name: "notebook_run_all",
    description:
      "Run every code cell of the open notebook in order (stopping at the first error unless stopOnError is false) and save the outputs.",
    tier: "X",
    parameters: {
      type: "object",
      properties: {
        timeoutSeconds: { type: "integer", minimum: 1, default: 30, description: "Per cell." },
        stopOnError: { type: "boolean", default: true, description: "Stop at the first failing cell." },
      },
    },
    async run(args, ctx) {
      const open = current(ctx);
      const notebook: Notebook = await readNotebook(open.path, open.shown);
      const cells: { index: number; status: string; output: string }[] = [];
      for (const [index, cell] of notebook.cells.entries()) {
        if (cell.cell_type !== "code") continue;
        const result = await runCell(ctx, open, cell, secondsOf(args, ctx));
        cells.push({ index, status: result.failed ? "error" : "ok", output: result.output });
        if (result.failed && args.stopOnError !== false) break;
      }
      await saveNotebook(open.path, notebook);
      return { ran: cells.length, errors: cells.filter((c) => c.status === "error").length, cells };
    },
  },
  {
    name: "notebook_get_vars",
    description: "The variables of the open notebook's kernel: { name: { type, value } } (value is the repr, cut at 200 characters).",
    tier: "A",
    parameters: { type: "object", properties: { filter: { type: "string", description: "A regular expression on the names." } } },
    async run(args, ctx) {
      const answer = await kernelOf(ctx, current(ctx)).request({ op: "vars", filter: (args.filter as string | undefined) ?? "" }, 10_000);
      if (typeof answer.error === "string") throw new ToolError(answer.error);
      return answer.vars as Record<string, unknown>;
    },
  },
  {
    name: "notebook_export",
    description: "Write the open notebook, with its outputs, to a file of the workspace as ipynb or html.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "The file to write." },
        format: { type: "string", enum: ["ipynb", "html"], default: "ipynb", description: "ipynb or html." },
      },
      required: ["path"],
    },
    async run(args, ctx) {
      const open = current(ctx);
      const target = ctx.services.workspace.resolve(args.path as string);
      const notebook = await readNotebook(open.path, open.shown);
      const format = (args.format as string | undefined) ?? "ipynb";
      if (format !== "ipynb" && format !== "html") throw new ToolError("format must be ipynb or html");
      await writeAtomic(target, format === "html" ? notebookHtml(notebook, open.shown) : `${JSON.stringify(notebook, null, 1)}\n`);
      return `Exported ${notebook.cells.length} cells of ${open.shown} to ${ctx.services.workspace.display(target)} (${format})`;
    },
  },
];
