// Notebook files in nbformat 4: read (a missing file is a new empty notebook), cell sources as
// text, saved atomically, and rendered as a standalone HTML page for notebook_export.
import { readFile } from "node:fs/promises";
import { writeAtomic } from "../files/atomic.js";
import { ToolError } from "../tool.js";

export interface Cell {
  cell_type: "code" | "markdown" | "raw";
  source: string | string[];
  metadata: Record<string, unknown>;
  outputs?: Record<string, unknown>[];
  execution_count?: number | null;
  id?: string;
}

export interface Notebook {
  nbformat: number;
  nbformat_minor: number;
  metadata: Record<string, unknown>;
  cells: Cell[];
}

export function emptyNotebook(): Notebook {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: "python3", display_name: "Python 3", language: "python" },
      language_info: { name: "python" },
    },
    cells: [],
  };
}

export async function readNotebook(path: string, shown: string): Promise<Notebook> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return emptyNotebook();
    throw error;
  }
  let parsed: Notebook;
  try {
    parsed = JSON.parse(text) as Notebook;
  } catch {
    throw new ToolError(`'${shown}' is not a notebook (not JSON)`);
  }
  if (parsed?.nbformat !== 4 || !Array.isArray(parsed.cells)) throw new ToolError(`'${shown}' is not an nbformat 4 notebook`);
  return parsed;
}

export function sourceOf(cell: Cell): string {
  return Array.isArray(cell.source) ? cell.source.join("") : (cell.source ?? "");
}

/** Text as nbformat keeps it: lines, each but the last ending with a newline. */
export function lines(text: string): string[] {
  return text === "" ? [] : (text.match(/[^\n]*\n|[^\n]+$/g) ?? []);
}

export async function saveNotebook(path: string, notebook: Notebook): Promise<void> {
  await writeAtomic(path, `${JSON.stringify(notebook, null, 1)}\n`);
}

/** The outputs of a cell as plain text (what the tools answer). */
export function outputText(outputs: readonly Record<string, unknown>[]): string {
  return outputs
    .map((output) => {
      if (output.output_type === "stream") return joined(output.text);
      if (output.output_type === "execute_result" || output.output_type === "display_data")
        return `${joined((output.data as Record<string, unknown>)?.["text/plain"])}\n`;
      if (output.output_type === "error") return `${output.ename}: ${output.evalue}\n`;
      return "";
    })
    .join("");
}

function joined(value: unknown): string {
  return Array.isArray(value) ? value.join("") : typeof value === "string" ? value : "";
}

const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function notebookHtml(notebook: Notebook, title: string): string {
  const cells = notebook.cells.map((cell) => {
    const source = escapeHtml(sourceOf(cell));
    if (cell.cell_type === "markdown") return `<div class="cell markdown"><pre>${source}</pre></div>`;
    const count = cell.execution_count ?? " ";
    const output = cell.outputs && cell.outputs.length > 0 ? `<pre class="output">${escapeHtml(outputText(cell.outputs))}</pre>` : "";
    return `<div class="cell code"><div class="prompt">In [${count}]:</div><pre class="source">${source}</pre>${output}</div>`;
  });
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif;max-width:60em;margin:auto}.cell{margin:1em 0}.prompt{color:#307fc1;font-family:monospace}pre.source{background:#f7f7f7;padding:.5em}pre.output{padding:.5em;border-left:3px solid #ccc}</style>
</head><body>
${cells.join("\n")}
</body></html>
`;
}
