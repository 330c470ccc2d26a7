// The file and search families: formats (cat -n, listings, grep lines), the one-match rule of
// edit_file, atomic writes, and the jail (`..`, absolute paths, file and directory symlinks, new files).
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { filesFamily } from "./index.js";

const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) => toolNamed(filesFamily, name).run(args, ctx);

async function seeded(): Promise<TestToolContext> {
  const ctx = await testToolContext();
  const root = ctx.workspace.root;
  await mkdir(join(root, "src/deep/deeper"), { recursive: true });
  await mkdir(join(root, ".git"), { recursive: true });
  await writeFile(join(root, ".git/config"), "needle in git\n");
  await writeFile(join(root, "a.txt"), "one\ntwo needle\nthree\nfour\nfive\nsix needle\nseven\n");
  await writeFile(join(root, "src/main.ts"), "const needle = 1;\nexport {};\n");
  await writeFile(join(root, "src/deep/x.ts"), "NEEDLE upper\n");
  await writeFile(join(root, "src/deep/deeper/y.ts"), "nothing\n");
  await writeFile(join(root, "bin.dat"), Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0, 1, 2]));
  return ctx;
}

test("read_file numbers lines cat -n style and picks a range", async (t) => {
  const ctx = await seeded();
  t.is(await run("read_file", { path: "a.txt", startLine: 2, endLine: 3 }, ctx), "     2\ttwo needle\n     3\tthree");
  const whole = (await run("read_file", { path: "a.txt" }, ctx)) as string;
  t.is(whole.split("\n").length, 7);
  t.is(whole.split("\n")[0], "     1\tone");
  t.is(await run("read_file", { path: "a.txt", startLine: 6, endLine: -1 }, ctx), "     6\tsix needle\n     7\tseven");
  await t.throwsAsync(run("read_file", { path: "missing.txt" }, ctx), { instanceOf: ToolError, message: "'missing.txt' does not exist" });
  await t.throwsAsync(run("read_file", { path: "src" }, ctx), { instanceOf: ToolError, message: "'src' is a directory" });
});

test("write_file creates directories and replaces a file atomically, leaving no temporary file", async (t) => {
  const ctx = await seeded();
  t.is(await run("write_file", { path: "new/dir/file.txt", content: "héllo" }, ctx), "Wrote 6 bytes to new/dir/file.txt");
  t.is(await readFile(join(ctx.workspace.root, "new/dir/file.txt"), "utf8"), "héllo");
  await run("write_file", { path: "new/dir/file.txt", content: "again" }, ctx);
  t.is(await readFile(join(ctx.workspace.root, "new/dir/file.txt"), "utf8"), "again");
  t.deepEqual(await readdir(join(ctx.workspace.root, "new/dir")), ["file.txt"]);
});

test("edit_file replaces exactly one match; none or several is an Error and changes nothing", async (t) => {
  const ctx = await seeded();
  t.is(await run("edit_file", { path: "a.txt", oldStr: "three", newStr: "3 $& $1" }, ctx), "Edited a.txt");
  t.true((await readFile(join(ctx.workspace.root, "a.txt"), "utf8")).includes("\n3 $& $1\n"));
  const before = await readFile(join(ctx.workspace.root, "a.txt"), "utf8");
  await t.throwsAsync(run("edit_file", { path: "a.txt", oldStr: "needle", newStr: "x" }, ctx), {
    instanceOf: ToolError,
    message: /occurs 2 times in a\.txt/,
  });
  await t.throwsAsync(run("edit_file", { path: "a.txt", oldStr: "absent", newStr: "x" }, ctx), {
    instanceOf: ToolError,
    message: /not found in a\.txt/,
  });
  t.is(await readFile(join(ctx.workspace.root, "a.txt"), "utf8"), before);
});

test("list_directory prints one workspace-relative path per line, directories with /, .git skipped, maxDepth 2", async (t) => {
  const ctx = await seeded();
  t.is(await run("list_directory", {}, ctx), ["a.txt", "bin.dat", "src/", "src/deep/", "src/main.ts"].join("\n"));
  t.is(await run("list_directory", { path: "src", maxDepth: 1 }, ctx), ["src/deep/", "src/main.ts"].join("\n"));
  t.is(
    await run("list_directory", { path: "src/deep", maxDepth: 5 }, ctx),
    ["src/deep/deeper/", "src/deep/deeper/y.ts", "src/deep/x.ts"].join("\n"),
  );
  await t.throwsAsync(run("list_directory", { path: "a.txt" }, ctx), { instanceOf: ToolError });
});

test("grep prints path:line:text, skips .git and binary files, filters by glob and ignores case on request", async (t) => {
  const ctx = await seeded();
  t.is(
    await run("grep", { pattern: "needle" }, ctx),
    ["a.txt:2:two needle", "a.txt:6:six needle", "src/main.ts:1:const needle = 1;"].join("\n"),
  );
  t.is(
    await run("grep", { pattern: "needle", glob: "*.ts", ignoreCase: true }, ctx),
    ["src/deep/x.ts:1:NEEDLE upper", "src/main.ts:1:const needle = 1;"].join("\n"),
  );
  t.is(await run("grep", { pattern: "needle", path: "src", glob: "deep/**", ignoreCase: true }, ctx), "src/deep/x.ts:1:NEEDLE upper");
  t.is(await run("grep", { pattern: "^nope$" }, ctx), "No matches.");
  await t.throwsAsync(run("grep", { pattern: "(" }, ctx), { instanceOf: ToolError, message: /pattern is not a valid regular expression/ });
});

test("grep prints context lines as path-line-text and notes when maxResults cut the output", async (t) => {
  const ctx = await seeded();
  t.is(
    await run("grep", { pattern: "needle", path: "a.txt", context: 1 }, ctx),
    ["a.txt-1-one", "a.txt:2:two needle", "a.txt-3-three", "--", "a.txt-5-five", "a.txt:6:six needle", "a.txt-7-seven"].join("\n"),
  );
  const cut = (await run("grep", { pattern: "needle", maxResults: 1 }, ctx)) as string;
  t.is(cut.split("\n")[0], "a.txt:2:two needle");
  t.is(cut.split("\n").length, 2);
  t.regex(cut, /results cut at maxResults 1/);
});

test("glob answers sorted workspace-relative paths", async (t) => {
  const ctx = await seeded();
  t.is(await run("glob", { pattern: "**/*.ts" }, ctx), ["src/deep/deeper/y.ts", "src/deep/x.ts", "src/main.ts"].join("\n"));
  t.is(await run("glob", { pattern: "*.ts", path: "src" }, ctx), "src/main.ts");
  t.is(await run("glob", { pattern: "*.none" }, ctx), "No files match.");
});

test("the jail refuses .., absolute paths and symlinks out, and nothing is read or written", async (t) => {
  const ctx = await seeded();
  const outside = await (await import("node:fs/promises")).mkdtemp(join(tmpdir(), "outside-"));
  await writeFile(join(outside, "secret.txt"), "secret\n");
  await symlink(join(outside, "secret.txt"), join(ctx.workspace.root, "file-link"));
  await symlink(outside, join(ctx.workspace.root, "dir-link"));
  const attempts: [string, Record<string, unknown>][] = [
    ["read_file", { path: "../../../etc/passwd" }],
    ["read_file", { path: join(outside, "secret.txt") }],
    ["read_file", { path: "file-link" }],
    ["read_file", { path: "dir-link/secret.txt" }],
    ["write_file", { path: "dir-link/new.txt", content: "x" }],
    ["write_file", { path: "../escape.txt", content: "x" }],
    ["edit_file", { path: "file-link", oldStr: "secret", newStr: "x" }],
    ["list_directory", { path: "dir-link" }],
    ["grep", { pattern: "secret", path: "dir-link" }],
    ["glob", { pattern: "*", path: outside }],
  ];
  for (const [name, args] of attempts) {
    const error = await t.throwsAsync(run(name, args, ctx), { instanceOf: PolicyBlock }, `${name} ${JSON.stringify(args)}`);
    t.regex(error?.message ?? "", /is outside the workspace$/);
  }
  t.deepEqual(await readdir(outside), ["secret.txt"]);
  t.is(await readFile(join(outside, "secret.txt"), "utf8"), "secret\n");
  // A walk lists a symlink but never follows it out.
  t.is(await run("grep", { pattern: "secret" }, ctx), "No matches.");
  // A new file inside the workspace is fine.
  t.is(await run("write_file", { path: "fresh/inside.txt", content: "ok" }, ctx), "Wrote 2 bytes to fresh/inside.txt");
});
