// grep and glob over the workspace: paths printed relative to the workspace root, `.git` and
// binary files (a NUL byte in the first 8 KiB) skipped, glob's answer sorted.
import { readFileSync, statSync } from "node:fs";
import { relative } from "node:path";
import { Minimatch } from "minimatch";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { walk } from "./walk.js";

/** The jailed search root and the files under it (or the one file it names). */
function* filesUnder(ctx: ToolContext, path: string | undefined): Generator<{ absolute: string; relative: string }> {
  const root = ctx.services.workspace.resolve(path ?? ".");
  const info = statOf(root);
  if (!info) throw new ToolError(`'${path}' does not exist`);
  if (!info.isDirectory()) {
    yield { absolute: root, relative: root.slice(root.lastIndexOf("/") + 1) };
    return;
  }
  for (const entry of walk(root)) if (!entry.directory && !entry.link) yield { absolute: entry.path, relative: relative(root, entry.path) };
}

function statOf(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** A glob filter: patterns without a slash match the base name, others the path under the search root. */
function globFilter(pattern: string): (relativePath: string) => boolean {
  const matcher = new Minimatch(pattern, { dot: true, matchBase: !pattern.includes("/") });
  return (path) => matcher.match(path);
}

const grepTool: ToolSpec = {
  name: "grep",
  description:
    "Search file contents with a regular expression. Lines print as path:line:text (context lines path-line-text); .git and binary files are skipped.",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "A regular expression (JavaScript syntax)." },
      path: { type: "string", description: "A file or directory to search (default the workspace root)." },
      glob: { type: "string", description: "Only files matching this glob (e.g. *.ts or src/**/*.py)." },
      context: { type: "integer", minimum: 0, default: 0, description: "Lines of context before and after each match." },
      ignoreCase: { type: "boolean", default: false, description: "Case-insensitive match." },
      maxResults: { type: "integer", minimum: 1, default: 50, description: "Matching lines printed at most." },
    },
    required: ["pattern"],
  },
  async run(args, ctx) {
    let regex: RegExp;
    try {
      regex = new RegExp(args.pattern as string, args.ignoreCase ? "i" : "");
    } catch (error) {
      throw new ToolError(`pattern is not a valid regular expression: ${(error as Error).message}`);
    }
    const context = (args.context as number | undefined) ?? 0;
    const maxResults = (args.maxResults as number | undefined) ?? 50;
    const filter = typeof args.glob === "string" && args.glob !== "" ? globFilter(args.glob) : undefined;
    const workspace = ctx.services.workspace;
    const out: string[] = [];
    let matches = 0;
    let cut = false;
    for (const file of filesUnder(ctx, args.path as string | undefined)) {
      if (filter && !filter(file.relative)) continue;
      if (ctx.signal.aborted) throw new ToolError("grep was cancelled");
      let data: Buffer;
      try {
        data = readFileSync(file.absolute);
      } catch {
        continue;
      }
      if (data.subarray(0, 8192).includes(0)) continue;
      const text = data.toString("utf8");
      if (!regex.test(text)) continue;
      const lines = text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      const shown = workspace.display(file.absolute);
      let printedTo = -1;
      for (let n = 0; n < lines.length; n++) {
        if (!regex.test(lines[n] as string)) continue;
        if (matches === maxResults) {
          cut = true;
          break;
        }
        matches++;
        const from = Math.max(n - context, printedTo + 1);
        if (context > 0 && printedTo >= 0 && from > printedTo + 1) out.push("--");
        for (let c = from; c < n; c++) out.push(`${shown}-${c + 1}-${lines[c]}`);
        out.push(`${shown}:${n + 1}:${lines[n]}`);
        printedTo = n;
        // Trailing context, unless the next lines hold matches (printed as matches then).
        for (let c = n + 1; c <= Math.min(n + context, lines.length - 1) && !regex.test(lines[c] as string); c++) {
          out.push(`${shown}-${c + 1}-${lines[c]}`);
          printedTo = c;
        }
      }
      if (cut) break;
      if (context > 0 && printedTo >= 0) out.push("--");
    }
    if (out.at(-1) === "--") out.pop();
    if (matches === 0) return "No matches.";
    if (cut) out.push(`[results cut at maxResults ${maxResults}; narrow the search or raise maxResults]`);
    return out.join("\n");
  },
};

const globTool: ToolSpec = {
  name: "glob",
  description: "Find files by glob pattern (e.g. **/*.ts); paths relative to the workspace root, sorted, directories end with /.",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "A glob: *, **, ?, [..], {a,b}." },
      path: { type: "string", description: "The directory the pattern is relative to (default the workspace root)." },
    },
    required: ["pattern"],
  },
  async run(args, ctx) {
    const workspace = ctx.services.workspace;
    const root = workspace.resolve((args.path as string | undefined) ?? ".");
    if (!statOf(root)?.isDirectory()) throw new ToolError(`'${args.path}' is not a directory`);
    const matcher = new Minimatch(args.pattern as string, { dot: true });
    const found: string[] = [];
    for (const entry of walk(root)) {
      if (matcher.match(relative(root, entry.path))) found.push(workspace.display(entry.path) + (entry.directory ? "/" : ""));
    }
    found.sort();
    return found.length === 0 ? "No files match." : found.join("\n");
  },
};

export const searchTools: ToolSpec[] = [grepTool, globTool];
