// The git family through the git CLI: status, diff, log, commit (with and without a repository
// identity), push and pull against a bare remote in a temporary directory, branches, checkout,
// stash, and the errors (no repository, option injection, nothing to commit, the jail).
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { gitFamily } from "./index.js";

// A HOME without a global git identity, for the children and for the set-up below.
const home = await mkdtemp(join(tmpdir(), "git-home-"));
process.env.HOME = home;
const gitEnv = { PATH: process.env.PATH ?? "", HOME: home, GIT_CONFIG_NOSYSTEM: "1" };

const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) =>
  toolNamed(gitFamily, name).run(args, ctx) as Promise<string>;
const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8" });

async function repo(settings?: { git: { authorName: string; authorEmail: string } }): Promise<TestToolContext> {
  const ctx = await testToolContext(settings ? { settings } : {});
  git(ctx.workspace.root, "init", "-q", "-b", "main");
  await writeFile(join(ctx.workspace.root, "a.txt"), "one\n");
  return ctx;
}

test("git_commit stages everything and commits as Tools:Git:AuthorName/Email without an identity", async (t) => {
  const ctx = await repo();
  t.regex(await run("git_status", {}, ctx), /\?\? a\.txt/);
  t.regex(await run("git_commit", { message: "first" }, ctx), /first/);
  t.is(git(ctx.workspace.root, "log", "--format=%an <%ae> %s").trim(), "app-agent <agent@localhost> first");
  t.regex(await run("git_status", {}, ctx), /nothing to commit, working tree clean/);
  await t.throwsAsync(run("git_commit", { message: "again" }, ctx), { instanceOf: ToolError, message: /nothing to commit/ });
  const custom = await repo({ git: { authorName: "Robot", authorEmail: "robot@example.test" } });
  await run("git_commit", { message: "custom" }, custom);
  t.is(git(custom.workspace.root, "log", "--format=%an <%ae>").trim(), "Robot <robot@example.test>");
});

test("git_commit keeps the repository's own identity", async (t) => {
  const ctx = await repo();
  git(ctx.workspace.root, "config", "user.name", "Repo Person");
  git(ctx.workspace.root, "config", "user.email", "repo@example.test");
  await run("git_commit", { message: "mine" }, ctx);
  t.is(git(ctx.workspace.root, "log", "--format=%an <%ae>").trim(), "Repo Person <repo@example.test>");
});

test("git_diff shows unstaged, staged and branch differences; git_log lists commits", async (t) => {
  const ctx = await repo();
  await run("git_commit", { message: "base" }, ctx);
  t.is(await run("git_diff", {}, ctx), "No changes.");
  await writeFile(join(ctx.workspace.root, "a.txt"), "one\ntwo\n");
  t.regex(await run("git_diff", {}, ctx), /\+two/);
  t.is(await run("git_diff", { target: "staged" }, ctx), "No changes.");
  git(ctx.workspace.root, "add", "a.txt");
  t.regex(await run("git_diff", { target: "staged" }, ctx), /\+two/);
  await run("git_commit", { message: "second" }, ctx);
  t.regex(await run("git_diff", { target: "HEAD~1" }, ctx), /\+two/);
  const log = (await run("git_log", {}, ctx)).split("\n");
  t.is(log.length, 2);
  t.regex(log[0] as string, /^[0-9a-f]{7,} \d{4}-\d\d-\d\d app-agent second$/);
  t.is((await run("git_log", { count: 1 }, ctx)).split("\n").length, 1);
});

test("git_push and git_pull move commits through a bare remote", async (t) => {
  const ctx = await testToolContext();
  const bare = await mkdtemp(join(tmpdir(), "bare-"));
  git(bare, "init", "-q", "--bare", "-b", "main");
  const a = join(ctx.workspace.root, "a");
  const b = join(ctx.workspace.root, "b");
  git(ctx.workspace.root, "clone", "-q", bare, "a");
  await writeFile(join(a, "shared.txt"), "from a\n");
  await run("git_commit", { path: "a", message: "from a" }, ctx);
  await run("git_push", { path: "a" }, ctx);
  git(ctx.workspace.root, "clone", "-q", bare, "b");
  t.is(await readFile(join(b, "shared.txt"), "utf8"), "from a\n");
  await writeFile(join(a, "shared.txt"), "from a, again\n");
  await run("git_commit", { path: "a", message: "again" }, ctx);
  await run("git_push", { path: "a", remote: "origin", branch: "main" }, ctx);
  await run("git_pull", { path: "b" }, ctx);
  t.is(await readFile(join(b, "shared.txt"), "utf8"), "from a, again\n");
  await t.throwsAsync(run("git_push", { path: "a", remote: "nowhere" }, ctx), { instanceOf: ToolError, message: /^git push failed:/ });
});

test("git_branch lists, creates and deletes; git_checkout switches, creates and restores files", async (t) => {
  const ctx = await repo();
  await run("git_commit", { message: "base" }, ctx);
  t.is(await run("git_branch", { name: "feature" }, ctx), "Created branch feature");
  t.is(await run("git_branch", {}, ctx), "  feature\n* main");
  await run("git_checkout", { target: "feature" }, ctx);
  t.is(git(ctx.workspace.root, "branch", "--show-current").trim(), "feature");
  await run("git_checkout", { target: "topic", createNew: true }, ctx);
  t.is(git(ctx.workspace.root, "branch", "--show-current").trim(), "topic");
  await run("git_checkout", { target: "main" }, ctx);
  t.regex(await run("git_branch", { name: "feature", delete: true }, ctx), /Deleted branch feature/);
  await writeFile(join(ctx.workspace.root, "a.txt"), "changed\n");
  await run("git_checkout", { target: "a.txt" }, ctx);
  t.is(await readFile(join(ctx.workspace.root, "a.txt"), "utf8"), "one\n");
  await t.throwsAsync(run("git_checkout", { target: "no-such-branch" }, ctx), { instanceOf: ToolError, message: /^git checkout failed/ });
});

test("git_stash pushes, lists, pops and drops", async (t) => {
  const ctx = await repo();
  await run("git_commit", { message: "base" }, ctx);
  await writeFile(join(ctx.workspace.root, "a.txt"), "work in progress\n");
  await run("git_stash", { message: "wip" }, ctx);
  t.is(await readFile(join(ctx.workspace.root, "a.txt"), "utf8"), "one\n");
  t.regex(await run("git_stash", { action: "list" }, ctx), /stash@\{0\}: On main: wip/);
  await run("git_stash", { action: "pop" }, ctx);
  t.is(await readFile(join(ctx.workspace.root, "a.txt"), "utf8"), "work in progress\n");
  t.is(await run("git_stash", { action: "list" }, ctx), "No stashes.");
  await t.throwsAsync(run("git_stash", { action: "drop" }, ctx), { instanceOf: ToolError, message: /^git stash failed/ });
});

test("no repository, option injection and paths outside the workspace are refused", async (t) => {
  const ctx = await testToolContext();
  await mkdir(join(ctx.workspace.root, "plain"));
  await t.throwsAsync(run("git_status", { path: "plain" }, ctx), { instanceOf: ToolError, message: /not a git repository/ });
  const repoCtx = await repo();
  await t.throwsAsync(run("git_checkout", { target: "--orphan=x" }, repoCtx), {
    instanceOf: ToolError,
    message: "target must not start with '-'",
  });
  await t.throwsAsync(run("git_diff", { target: "--output=/tmp/x" }, repoCtx), {
    instanceOf: ToolError,
    message: "target must not start with '-'",
  });
  await t.throwsAsync(run("git_push", { remote: "--exec=evil" }, repoCtx), {
    instanceOf: ToolError,
    message: "remote must not start with '-'",
  });
  await t.throwsAsync(run("git_status", { path: "../.." }, ctx), { instanceOf: PolicyBlock, message: /outside the workspace/ });
});
