// create_patch, apply_patch and batch_edit_files: the unified diff, validation of every edit before
// any write, several edits to one file in order, and the jail.
import { mkdtemp, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { patchFamily } from "./index.js";
import { unifiedDiff } from "./unified-diff.js";

const run = (name: string, edits: unknown, ctx: TestToolContext) =>
  toolNamed(patchFamily, name).run({ editsJson: typeof edits === "string" ? edits : JSON.stringify(edits) }, ctx);

async function seeded(): Promise<TestToolContext> {
  const ctx = await testToolContext();
  await writeFile(join(ctx.workspace.root, "a.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n");
  await writeFile(join(ctx.workspace.root, "b.txt"), "alpha\nbeta\n");
  return ctx;
}

const contents = async (ctx: TestToolContext) =>
  Object.fromEntries(
    await Promise.all(
      (await readdir(ctx.workspace.root, { withFileTypes: true }))
        .filter((f) => f.isFile())
        .map(async (f) => [f.name, await readFile(join(ctx.workspace.root, f.name), "utf8")]),
    ),
  );

test("create_patch answers a unified diff and changes no file", async (t) => {
  const ctx = await seeded();
  const before = await contents(ctx);
  const patch = await run(
    "create_patch",
    [
      { path: "a.txt", oldText: "\n2\n", newText: "\ntwo\n" },
      { path: "a.txt", oldText: "11\n", newText: "" },
      { path: "c.txt", oldText: "", newText: "new\n" },
    ],
    ctx,
  );
  t.is(
    patch,
    [
      "--- a/a.txt",
      "+++ b/a.txt",
      "@@ -1,5 +1,5 @@",
      " 1",
      "-2",
      "+two",
      " 3",
      " 4",
      " 5",
      "@@ -8,5 +8,4 @@",
      " 8",
      " 9",
      " 10",
      "-11",
      " 12",
      "--- /dev/null",
      "+++ b/c.txt",
      "@@ -0,0 +1,1 @@",
      "+new",
      "",
    ].join("\n"),
  );
  t.deepEqual(await contents(ctx), before);
  t.is(await run("create_patch", [{ path: "b.txt", oldText: "beta", newText: "beta" }], ctx), "No changes.");
});

test("a unified diff marks a last line without a newline", (t) => {
  t.is(unifiedDiff("x\ny", "x\nz\n", "a/f", "b/f"), "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n");
});

test("apply_patch applies every edit and answers { edits, files }", async (t) => {
  const ctx = await seeded();
  const result = await run(
    "apply_patch",
    [
      { path: "a.txt", oldText: "1\n2\n", newText: "one\n" },
      { path: "b.txt", oldText: "beta", newText: "gamma" },
      { path: "sub/new.txt", oldText: "", newText: "created" },
    ],
    ctx,
  );
  t.deepEqual(result, { edits: 3, files: 3 });
  const after = await contents(ctx);
  t.true((after["a.txt"] as string).startsWith("one\n3\n"));
  t.is(after["b.txt"], "alpha\ngamma\n");
  t.is(await readFile(join(ctx.workspace.root, "sub/new.txt"), "utf8"), "created");
});

test("batch_edit_files applies several edits to one file in order", async (t) => {
  const ctx = await seeded();
  const result = await run(
    "batch_edit_files",
    [
      { path: "b.txt", oldText: "alpha", newText: "first" },
      { path: "b.txt", oldText: "first\nbeta", newText: "first\nsecond" },
    ],
    ctx,
  );
  t.deepEqual(result, { edits: 2, files: 1 });
  t.is(await readFile(join(ctx.workspace.root, "b.txt"), "utf8"), "first\nsecond\n");
});

test("one bad edit anywhere changes nothing", async (t) => {
  const ctx = await seeded();
  const before = await contents(ctx);
  for (const name of ["apply_patch", "batch_edit_files"]) {
    await t.throwsAsync(
      run(
        name,
        [
          { path: "b.txt", oldText: "alpha", newText: "x" },
          { path: "a.txt", oldText: "missing", newText: "y" },
        ],
        ctx,
      ),
      { instanceOf: ToolError, message: /not found in a\.txt \(edit 2\)/ },
    );
    await t.throwsAsync(
      run(
        name,
        [
          { path: "b.txt", oldText: "alpha", newText: "x" },
          { path: "a.txt", oldText: "1", newText: "y" },
        ],
        ctx,
      ),
      {
        instanceOf: ToolError,
        message: /occurs 5 times/,
      },
    );
    await t.throwsAsync(
      run(
        name,
        [
          { path: "b.txt", oldText: "alpha", newText: "x" },
          { path: "nope.txt", oldText: "a", newText: "b" },
        ],
        ctx,
      ),
      {
        instanceOf: ToolError,
        message: /'nope\.txt' does not exist/,
      },
    );
  }
  t.deepEqual(await contents(ctx), before);
});

test("an edit list that is not a JSON array of edits is an Error naming the problem", async (t) => {
  const ctx = await seeded();
  await t.throwsAsync(run("apply_patch", "{not json", ctx), { instanceOf: ToolError, message: "editsJson is not valid JSON" });
  await t.throwsAsync(run("apply_patch", [], ctx), { instanceOf: ToolError, message: /non-empty JSON array/ });
  await t.throwsAsync(run("apply_patch", [{ path: "a.txt", oldText: 1, newText: "x" }], ctx), {
    instanceOf: ToolError,
    message: "editsJson[0].oldText must be a string",
  });
});

test("patches cannot leave the jail: .., absolute paths and symlinks out change nothing", async (t) => {
  const ctx = await seeded();
  const outside = await mkdtemp(join(tmpdir(), "outside-"));
  await writeFile(join(outside, "target.txt"), "keep\n");
  await symlink(join(outside, "target.txt"), join(ctx.workspace.root, "link.txt"));
  await symlink(outside, join(ctx.workspace.root, "dir-link"));
  for (const path of ["../escape.txt", join(outside, "target.txt"), "link.txt", "dir-link/new.txt"]) {
    await t.throwsAsync(
      run(
        "apply_patch",
        [
          { path: "b.txt", oldText: "alpha", newText: "x" },
          { path, oldText: path.includes("new") || path.includes("escape") ? "" : "keep", newText: "pwned" },
        ],
        ctx,
      ),
      { instanceOf: PolicyBlock, message: /outside the workspace/ },
    );
  }
  t.deepEqual(await readdir(outside), ["target.txt"]);
  t.is(await readFile(join(outside, "target.txt"), "utf8"), "keep\n");
  t.is(await readFile(join(ctx.workspace.root, "b.txt"), "utf8"), "alpha\nbeta\n");
});
