// read_file, write_file, edit_file and list_directory: every path through the jail, writes atomic,
// lines numbered `cat -n` style, listings relative to the workspace root.
import { readFile, stat } from "node:fs/promises";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { writeAtomic } from "./atomic.js";
import { walk } from "./walk.js";

/** The file at `path` (jailed) as text, or ToolError when it is missing or a directory. */
export async function readText(ctx: ToolContext, path: string): Promise<{ absolute: string; text: string }> {
  const absolute = ctx.services.workspace.resolve(path);
  const info = await stat(absolute).catch(() => undefined);
  if (!info) throw new ToolError(`'${path}' does not exist`);
  if (info.isDirectory()) throw new ToolError(`'${path}' is a directory`);
  return { absolute, text: await readFile(absolute, "utf8") };
}

/** `text` with lines numbered like `cat -n`: the number right-aligned in 6 columns, a tab, the line. */
export function numberLines(text: string, first = 1, last = -1): string {
  if (text === "") return "";
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  const end = last === -1 || last > lines.length ? lines.length : last;
  const out: string[] = [];
  for (let n = Math.max(first, 1); n <= end; n++) out.push(`${String(n).padStart(6)}\t${lines[n - 1]}`);
  return out.join("\n");
}

const readFileTool: ToolSpec = {
  name: "read_file",
  description: "Read a text file of the workspace, lines numbered (cat -n). startLine/endLine (1-based, -1 = end of file) pick a range.",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The file, relative to the workspace root." },
      startLine: { type: "integer", minimum: 1, description: "First line (1-based)." },
      endLine: { type: "integer", minimum: -1, description: "Last line; -1 for the end of the file." },
    },
    required: ["path"],
  },
  async run(args, ctx) {
    const { text } = await readText(ctx, args.path as string);
    const start = (args.startLine as number | undefined) ?? 1;
    const end = (args.endLine as number | undefined) ?? -1;
    if (end !== -1 && end < start) throw new ToolError(`endLine ${end} is before startLine ${start}`);
    return numberLines(text, start, end);
  },
};

const writeFileTool: ToolSpec = {
  name: "write_file",
  description: "Write a file of the workspace (created with its directories if missing, replaced atomically if present).",
  tier: "C",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The file, relative to the workspace root." },
      content: { type: "string", description: "The whole new content." },
    },
    required: ["path", "content"],
  },
  async run(args, ctx) {
    const absolute = ctx.services.workspace.resolve(args.path as string);
    const info = await stat(absolute).catch(() => undefined);
    if (info?.isDirectory()) throw new ToolError(`'${args.path}' is a directory`);
    const content = args.content as string;
    await writeAtomic(absolute, content);
    return `Wrote ${Buffer.byteLength(content)} bytes to ${ctx.services.workspace.display(absolute)}`;
  },
};

/** Replaces the one occurrence of `oldText` in `text`; ToolError (naming `where`) for none or several. */
export function replaceOnce(text: string, oldText: string, newText: string, where: string): string {
  if (oldText === "") throw new ToolError(`the text to replace is empty (${where})`);
  const at = text.indexOf(oldText);
  if (at < 0) throw new ToolError(`the text to replace was not found in ${where}`);
  let count = 0;
  for (let i = at; i >= 0; i = text.indexOf(oldText, i + oldText.length)) count++;
  if (count > 1) throw new ToolError(`the text to replace occurs ${count} times in ${where}; give more context so it occurs once`);
  return text.slice(0, at) + newText + text.slice(at + oldText.length);
}

const editFileTool: ToolSpec = {
  name: "edit_file",
  description: "Replace exactly one occurrence of oldStr with newStr in a file; none or several occurrences change nothing.",
  tier: "C",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The file, relative to the workspace root." },
      oldStr: { type: "string", description: "The text to replace; must occur exactly once." },
      newStr: { type: "string", description: "The replacement." },
    },
    required: ["path", "oldStr", "newStr"],
  },
  async run(args, ctx) {
    const { absolute, text } = await readText(ctx, args.path as string);
    const where = ctx.services.workspace.display(absolute);
    await writeAtomic(absolute, replaceOnce(text, args.oldStr as string, args.newStr as string, where));
    return `Edited ${where}`;
  },
};

const listDirectoryTool: ToolSpec = {
  name: "list_directory",
  description:
    "List a directory of the workspace: one path per line (relative to the workspace root), directories end with /, .git skipped.",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The directory (default the workspace root)." },
      maxDepth: { type: "integer", minimum: 1, default: 2, description: "Levels listed (1 = direct children)." },
    },
  },
  async run(args, ctx) {
    const workspace = ctx.services.workspace;
    const absolute = workspace.resolve((args.path as string | undefined) ?? ".");
    const info = await stat(absolute).catch(() => undefined);
    if (!info) throw new ToolError(`'${args.path}' does not exist`);
    if (!info.isDirectory()) throw new ToolError(`'${args.path}' is not a directory`);
    const lines: string[] = [];
    for (const entry of walk(absolute, (args.maxDepth as number | undefined) ?? 2)) {
      lines.push(workspace.display(entry.path) + (entry.directory ? "/" : ""));
    }
    return lines.length === 0 ? "(empty directory)" : lines.join("\n");
  },
};

export const fileTools: ToolSpec[] = [readFileTool, writeFileTool, editFileTool, listDirectoryTool];
