// create_patch, apply_patch and batch_edit_files: an edit list (JSON array of { path, oldText,
// newText }) is planned in full first (every path through the jail, every oldText found exactly
// once in the file as the earlier edits left it); only then are files written: every new content
// to a temporary file, then all renamed. Any failure changes nothing.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { replaceOnce } from "../files/file-tools.js";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { unifiedDiff } from "./unified-diff.js";

interface Edit {
  path: string;
  oldText: string;
  newText: string;
}

interface PlannedFile {
  display: string;
  /** null: the file does not exist yet. */
  before: string | null;
  after: string;
}

function parseEdits(editsJson: string): Edit[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(editsJson);
  } catch {
    throw new ToolError("editsJson is not valid JSON");
  }
  if (!Array.isArray(parsed) || parsed.length === 0)
    throw new ToolError("editsJson must be a non-empty JSON array of { path, oldText, newText }");
  return parsed.map((edit, i) => {
    for (const field of ["path", "oldText", "newText"]) {
      if (typeof (edit as Record<string, unknown>)?.[field] !== "string") throw new ToolError(`editsJson[${i}].${field} must be a string`);
    }
    return edit as Edit;
  });
}

/** Every edit applied in memory, in order; ToolError/PolicyBlock before anything is written. */
async function plan(ctx: ToolContext, editsJson: string): Promise<Map<string, PlannedFile>> {
  const edits = parseEdits(editsJson);
  const files = new Map<string, PlannedFile>();
  for (const [i, edit] of edits.entries()) {
    const absolute = ctx.services.workspace.resolve(edit.path);
    let file = files.get(absolute);
    if (!file) {
      const info = await stat(absolute).catch(() => undefined);
      if (info?.isDirectory()) throw new ToolError(`editsJson[${i}]: '${edit.path}' is a directory`);
      const before = info ? await readFile(absolute, "utf8") : null;
      file = { display: ctx.services.workspace.display(absolute), before, after: before ?? "" };
      files.set(absolute, file);
    }
    const where = `${file.display} (edit ${i + 1})`;
    if (edit.oldText === "") {
      // An empty oldText creates a file, or fills an empty one.
      if (file.after !== "") throw new ToolError(`editsJson[${i}]: oldText is empty but ${file.display} is not`);
      file.after = edit.newText;
    } else if (file.before === null && file.after === "") {
      throw new ToolError(`editsJson[${i}]: '${edit.path}' does not exist`);
    } else {
      file.after = replaceOnce(file.after, edit.oldText, edit.newText, where);
    }
  }
  return files;
}

/** Writes every planned file: all temporary files first, then the renames. */
async function commit(files: Map<string, PlannedFile>): Promise<void> {
  const staged: [string, string][] = [];
  try {
    for (const [absolute, file] of files) {
      await mkdir(dirname(absolute), { recursive: true });
      const temp = join(dirname(absolute), `.${basename(absolute)}.${randomBytes(6).toString("hex")}.tmp`);
      await writeFile(temp, file.after, { flag: "wx" });
      staged.push([temp, absolute]);
    }
  } catch (error) {
    await Promise.all(staged.map(([temp]) => rm(temp, { force: true })));
    throw error;
  }
  for (const [temp, absolute] of staged) await rename(temp, absolute);
}

const editsParameters = {
  type: "object" as const,
  properties: {
    editsJson: {
      type: "string" as const,
      description: 'A JSON array of edits: [{ "path", "oldText", "newText" }]; oldText must occur exactly once ("" creates a file).',
    },
  },
  required: ["editsJson"],
};

const createPatch: ToolSpec = {
  name: "create_patch",
  description: "Show the unified diff an edit list would make; no file is changed.",
  tier: "A",
  parameters: editsParameters,
  async run(args, ctx) {
    const files = await plan(ctx, args.editsJson as string);
    const text = [...files.values()].map((f) => unifiedDiff(f.before, f.after, `a/${f.display}`, `b/${f.display}`)).join("");
    return text === "" ? "No changes." : text;
  },
};

function applying(name: string, description: string): ToolSpec {
  return {
    name,
    description,
    tier: "C",
    parameters: editsParameters,
    async run(args, ctx) {
      const edits = parseEdits(args.editsJson as string).length;
      const files = await plan(ctx, args.editsJson as string);
      await commit(files);
      return { edits, files: files.size };
    },
  };
}

export const patchTools: ToolSpec[] = [
  createPatch,
  applying(
    "apply_patch",
    "Apply an edit list: every edit is validated first, then all files are written atomically; one missing oldText changes nothing. Answers { edits, files }.",
  ),
  applying(
    "batch_edit_files",
    "Edit several files: edits grouped by file and applied in order, all validated before any file is written atomically. Answers { edits, files }.",
  ),
];
