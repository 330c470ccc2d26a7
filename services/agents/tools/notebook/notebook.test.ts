// The notebook tools: a python3 kernel per agent and notebook keeping state across cells, outputs
// saved in nbformat 4, run_all with stopOnError, variables, export to ipynb and html, the cell
// timeout, and the jail.
import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { notebookFamily } from "./index.js";

const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) =>
  toolNamed(notebookFamily, name).run(args, ctx) as Promise<Record<string, unknown>>;
const context = () => testToolContext({ agentId: randomUUID() });

const cell = (source: string, type = "code") => ({
  cell_type: type,
  source: [source],
  metadata: {},
  ...(type === "code" ? { outputs: [], execution_count: null } : {}),
});

test("a new notebook keeps kernel state across cells and saves outputs in nbformat 4", async (t) => {
  const ctx = await context();
  t.deepEqual(await run("notebook_open", { path: "work/new.ipynb" }, ctx), { path: "work/new.ipynb", cells: [] });
  t.like(await run("notebook_run_cell", { index: 0, code: "x = 20\nprint('set')" }, ctx), {
    index: 0,
    executionCount: 1,
    status: "ok",
    output: "set\n",
  });
  t.like(await run("notebook_run_cell", { index: 1, code: "x * 2 + 2" }, ctx), {
    index: 1,
    executionCount: 2,
    status: "ok",
    output: "42\n",
  });
  const saved = JSON.parse(await readFile(join(ctx.workspace.root, "work/new.ipynb"), "utf8"));
  t.is(saved.nbformat, 4);
  t.is(saved.metadata.kernelspec.name, "python3");
  t.deepEqual(saved.cells[0].outputs, [{ output_type: "stream", name: "stdout", text: ["set\n"] }]);
  t.deepEqual(saved.cells[1].outputs, [{ output_type: "execute_result", execution_count: 2, data: { "text/plain": "42" }, metadata: {} }]);
  t.deepEqual(saved.cells[1].source, ["x * 2 + 2"]);
  t.deepEqual(await run("notebook_get_vars", {}, ctx), { x: { type: "int", value: "20" } });
});

test("an error is an output of the cell; the kernel lives on", async (t) => {
  const ctx = await context();
  await run("notebook_open", { path: "err.ipynb" }, ctx);
  const failed = await run("notebook_run_cell", { index: 0, code: "y = 1\n1 / 0" }, ctx);
  t.like(failed, { status: "error", output: "ZeroDivisionError: division by zero\n" });
  const saved = JSON.parse(await readFile(join(ctx.workspace.root, "err.ipynb"), "utf8"));
  t.like(saved.cells[0].outputs[0], { output_type: "error", ename: "ZeroDivisionError", evalue: "division by zero" });
  t.like(await run("notebook_run_cell", { index: 1, code: "y" }, ctx), { status: "ok", output: "1\n" });
  t.like(await run("notebook_run_cell", { index: 2, code: "import sys; sys.exit(3)" }, ctx), {
    status: "error",
    output: "SystemExit: 3\n",
  });
  t.like(await run("notebook_run_cell", { index: 3, code: "y + 1" }, ctx), { output: "2\n" });
});

test("notebook_run_all runs every code cell in order and stops at the first error unless told not to", async (t) => {
  const ctx = await context();
  const notebook = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [cell("a = 1"), cell("# Title", "markdown"), cell("a / 0"), cell("print(a + 1)")],
  };
  await writeFile(join(ctx.workspace.root, "all.ipynb"), JSON.stringify(notebook));
  const opened = await run("notebook_open", { path: "all.ipynb" }, ctx);
  t.deepEqual(
    (opened.cells as { type: string }[]).map((c) => c.type),
    ["code", "markdown", "code", "code"],
  );
  const stopped = await run("notebook_run_all", {}, ctx);
  t.like(stopped, { ran: 2, errors: 1 });
  t.deepEqual(
    (stopped.cells as { index: number }[]).map((c) => c.index),
    [0, 2],
  );
  const all = await run("notebook_run_all", { stopOnError: false }, ctx);
  t.like(all, { ran: 3, errors: 1 });
  t.like((all.cells as Record<string, unknown>[])[2], { index: 3, status: "ok", output: "2\n" });
  await t.throwsAsync(run("notebook_run_cell", { index: 1 }, ctx), { instanceOf: ToolError, message: "cell 1 is a markdown cell" });
  await t.throwsAsync(run("notebook_run_cell", { index: 9 }, ctx), { instanceOf: ToolError, message: /no cell 9/ });
});

test("kernels are per agent, variables filter by name, and a cell over its timeout stops the kernel", async (t) => {
  const a = await context();
  const b = { ...a, agentId: randomUUID() };
  await run("notebook_open", { path: "shared.ipynb" }, a);
  await run("notebook_open", { path: "shared.ipynb" }, b);
  await run("notebook_run_cell", { index: 0, code: "alpha = 'a'\nbeta = [1, 2]" }, a);
  t.deepEqual(await run("notebook_get_vars", { filter: "^al" }, a), { alpha: { type: "str", value: "'a'" } });
  t.deepEqual(await run("notebook_get_vars", {}, b), {});
  const slow = await run("notebook_run_cell", { index: 0, code: "import time\ntime.sleep(60)", timeoutSeconds: 1 }, a);
  t.is(slow.status, "error");
  t.regex(slow.output as string, /ran over 1 s; the kernel was stopped/);
  t.deepEqual(await run("notebook_get_vars", {}, a), {}, "a fresh kernel after the timeout");
});

test("notebook_export writes ipynb and html; paths stay in the workspace", async (t) => {
  const ctx = await context();
  await t.throwsAsync(run("notebook_run_cell", { index: 0, code: "1" }, ctx), { instanceOf: ToolError, message: /notebook_open first/ });
  await run("notebook_open", { path: "out.ipynb" }, ctx);
  await run("notebook_run_cell", { index: 0, code: "print('<b>hi</b>')" }, ctx);
  t.regex(
    (await run("notebook_export", { path: "copy.ipynb" }, ctx)) as unknown as string,
    /Exported 1 cells of out\.ipynb to copy\.ipynb \(ipynb\)/,
  );
  t.is(JSON.parse(await readFile(join(ctx.workspace.root, "copy.ipynb"), "utf8")).cells[0].outputs[0].text[0], "<b>hi</b>\n");
  await run("notebook_export", { path: "page.html", format: "html" }, ctx);
  const html = await readFile(join(ctx.workspace.root, "page.html"), "utf8");
  t.true(html.includes("&lt;b&gt;hi&lt;/b&gt;"));
  t.true(html.includes("In [1]:"));
  await t.throwsAsync(run("notebook_export", { path: "../../escape.html", format: "html" }, ctx), { instanceOf: PolicyBlock });
  await t.throwsAsync(run("notebook_open", { path: "../x.ipynb" }, ctx), { instanceOf: PolicyBlock });
  await t.throwsAsync(run("notebook_open", { path: "x.txt" }, ctx), { instanceOf: ToolError, message: "path must end with .ipynb" });
  await writeFile(join(ctx.workspace.root, "broken.ipynb"), "{");
  await t.throwsAsync(run("notebook_open", { path: "broken.ipynb" }, ctx), { instanceOf: ToolError, message: /not a notebook/ });
});
