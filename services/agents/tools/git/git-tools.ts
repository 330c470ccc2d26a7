// The git family, through the `git` CLI run by the child-process runner in the jailed `path`
// (default the workspace root). No argument may start with `-` (no option injection); the ext::
// transport is off; git never prompts. Commits, pulls and stashes without a repository identity use
// Tools:Git:AuthorName/AuthorEmail. A failing git answers `Error: git <command> failed: <output>`.
import { childEnv, type RunResult, runChild, timeoutOf } from "../process/runner.js";
import type { JsonSchema, ToolContext, ToolSpec, Tier } from "../tool.js";
import { ToolError } from "../tool.js";

interface Git {
  /** Runs git; ToolError when it fails. */
  run(args: string[], options?: { identity?: boolean; seconds?: number }): Promise<string>;
  /** Runs git and answers the record whatever the exit code. */
  raw(args: string[]): Promise<RunResult>;
}

function gitIn(ctx: ToolContext, path: unknown): Git {
  const cwd = ctx.services.workspace.resolve(typeof path === "string" ? path : ".");
  const settings = ctx.settings as { git?: { authorName?: string; authorEmail?: string } };
  const raw = (args: string[], seconds = 60) =>
    runChild("git", ["-c", "protocol.ext.allow=never", "-c", "color.ui=false", ...args], {
      cwd,
      env: childEnv(ctx.settings, { GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat" }),
      maxChars: ctx.settings.maxOutputChars,
      timeoutMs: timeoutOf(ctx, seconds),
      signal: ctx.signal,
    });
  return {
    raw: (args) => raw(args),
    async run(args, options = {}) {
      let prefix: string[] = [];
      if (options.identity) {
        const name = (await raw(["config", "user.name"])).output.trim();
        const email = (await raw(["config", "user.email"])).output.trim();
        if (name === "") prefix = [...prefix, "-c", `user.name=${settings.git?.authorName ?? "app-agent"}`];
        if (email === "") prefix = [...prefix, "-c", `user.email=${settings.git?.authorEmail ?? "agent@localhost"}`];
      }
      const result = await raw([...prefix, ...args], options.seconds);
      if (result.timedOut) throw new ToolError(`git ${args[0]} timed out`);
      if (result.exitCode !== 0) throw new ToolError(`git ${args[0]} failed: ${result.output.trim() || `exit code ${result.exitCode}`}`);
      return result.output;
    },
  };
}

/** `value` as a git argument: a string not starting with `-`. */
function word(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "") throw new ToolError(`${name} must be a non-empty string`);
  if (value.startsWith("-")) throw new ToolError(`${name} must not start with '-'`);
  return value;
}

async function currentBranch(git: Git): Promise<string> {
  return (await git.run(["symbolic-ref", "--short", "HEAD"])).trim();
}

const pathParameter: JsonSchema = { type: "string", description: "The repository directory inside the workspace (default its root)." };

function gitTool(
  name: string,
  tier: Tier,
  description: string,
  properties: Record<string, JsonSchema>,
  required: string[],
  run: (args: Record<string, unknown>, git: Git) => Promise<string>,
): ToolSpec {
  return {
    name,
    tier,
    description,
    parameters: { type: "object", properties: { path: pathParameter, ...properties }, ...(required.length > 0 ? { required } : {}) },
    run: async (args, ctx) => run(args, gitIn(ctx, args.path)),
  };
}

const STAGED = new Set(["staged", "--staged", "cached", "--cached"]);

export const gitTools: ToolSpec[] = [
  gitTool("git_status", "A", "Show the working tree status (short format with the branch).", {}, [], async (_args, git) => {
    const out = await git.run(["status", "--short", "--branch"]);
    return out.trim().split("\n").length === 1 ? `${out.trim()}\nnothing to commit, working tree clean` : out.trimEnd();
  }),
  gitTool(
    "git_diff",
    "A",
    "Show changes: the working tree against the index, `staged` for the index against HEAD, or against a branch or commit.",
    { target: { type: "string", description: "A branch or commit, or `staged`." } },
    [],
    async (args, git) => {
      const target = args.target as string | undefined;
      const argv =
        target === undefined || target === ""
          ? ["diff"]
          : STAGED.has(target)
            ? ["diff", "--staged"]
            : ["diff", word(target, "target"), "--"];
      const out = await git.run(argv);
      return out === "" ? "No changes." : out;
    },
  ),
  gitTool(
    "git_log",
    "A",
    "Show the latest commits: short hash, date, author, subject.",
    { count: { type: "integer", minimum: 1, default: 10, description: "How many commits." } },
    [],
    async (args, git) =>
      (await git.run(["log", "-n", String((args.count as number | undefined) ?? 10), "--date=short", "--format=%h %ad %an %s"])).trimEnd(),
  ),
  gitTool(
    "git_commit",
    "C",
    "Stage every change and commit it.",
    { message: { type: "string", description: "The commit message." } },
    ["message"],
    async (args, git) => {
      if (typeof args.message !== "string" || args.message.trim() === "") throw new ToolError("message must not be empty");
      await git.run(["add", "-A"]);
      const status = await git.run(["status", "--porcelain"]);
      if (status.trim() === "") throw new ToolError("nothing to commit, working tree clean");
      return (await git.run(["commit", "-m", args.message], { identity: true })).trimEnd();
    },
  ),
  gitTool(
    "git_push",
    "C",
    "Push a branch (default the current one) to a remote (default origin).",
    {
      remote: { type: "string", default: "origin", description: "The remote." },
      branch: { type: "string", description: "The branch (default the current one)." },
    },
    [],
    async (args, git) => {
      const remote = word(args.remote ?? "origin", "remote");
      const branch = args.branch === undefined ? await currentBranch(git) : word(args.branch, "branch");
      const out = await git.run(["push", remote, branch], { seconds: 300 });
      return out.trim() === "" ? `Pushed ${branch} to ${remote}` : out.trimEnd();
    },
  ),
  gitTool(
    "git_pull",
    "C",
    "Pull a branch (default the current one) from a remote (default origin), merging.",
    {
      remote: { type: "string", default: "origin", description: "The remote." },
      branch: { type: "string", description: "The branch (default the current one)." },
    },
    [],
    async (args, git) => {
      const remote = word(args.remote ?? "origin", "remote");
      const branch = args.branch === undefined ? await currentBranch(git) : word(args.branch, "branch");
      return (await git.run(["pull", "--no-rebase", "--no-edit", remote, branch], { identity: true, seconds: 300 })).trimEnd();
    },
  ),
  gitTool(
    "git_branch",
    "A",
    "List branches (no name), create a branch (name), or delete one (name and delete).",
    {
      name: { type: "string", description: "The branch to create or delete; omit to list." },
      delete: { type: "boolean", default: false, description: "Delete the branch." },
    },
    [],
    async (args, git) => {
      if (args.name === undefined || args.name === "") {
        if (args.delete === true) throw new ToolError("delete needs a name");
        return (await git.run(["branch", "--list"])).trimEnd() || "No branches yet.";
      }
      const name = word(args.name, "name");
      if (args.delete === true) return (await git.run(["branch", "-d", name])).trimEnd();
      await git.run(["branch", name]);
      return `Created branch ${name}`;
    },
  ),
  gitTool(
    "git_checkout",
    "C",
    "Switch to a branch or commit, restore a file, or create a branch (createNew).",
    {
      target: { type: "string", description: "A branch, commit or file." },
      createNew: { type: "boolean", default: false, description: "Create the branch first." },
    },
    ["target"],
    async (args, git) => {
      const target = word(args.target, "target");
      const out = await git.run(args.createNew === true ? ["checkout", "-b", target] : ["checkout", target]);
      return out.trim() === "" ? `Checked out ${target}` : out.trimEnd();
    },
  ),
  gitTool(
    "git_stash",
    "C",
    "Stash changes (push, with an optional message), or pop, list or drop the latest stash.",
    {
      action: { type: "string", enum: ["push", "pop", "list", "drop"], default: "push", description: "What to do." },
      message: { type: "string", description: "The stash message (push)." },
    },
    [],
    async (args, git) => {
      const action = (args.action as string | undefined) ?? "push";
      if (action === "push") {
        const message = typeof args.message === "string" && args.message !== "" ? ["-m", args.message] : [];
        return (await git.run(["stash", "push", ...message], { identity: true })).trimEnd();
      }
      if (action === "list") return (await git.run(["stash", "list"])).trimEnd() || "No stashes.";
      if (action === "pop" || action === "drop") return (await git.run(["stash", action], { identity: true })).trimEnd();
      throw new ToolError(`action must be one of push, pop, list, drop`);
    },
  ),
];
