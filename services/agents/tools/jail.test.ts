import { mkdtemp, mkdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { Workspace } from "./jail.js";
import { PolicyBlock } from "./tool.js";

async function layout() {
  const base = await mkdtemp(join(tmpdir(), "jail-"));
  const root = join(base, "workspace");
  const outside = join(base, "outside");
  await mkdir(join(root, "src"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "no");
  await writeFile(join(root, "src", "a.txt"), "yes");
  await symlink(join(outside, "secret.txt"), join(root, "file-link"));
  await symlink(outside, join(root, "dir-link"));
  await symlink(join(outside, "new.txt"), join(root, "dangling-link"));
  await symlink(join(root, "src"), join(root, "inner-link"));
  return { workspace: await Workspace.open(root), base };
}

test("paths inside the workspace resolve to their real absolute path", async (t) => {
  const { workspace } = await layout();
  t.is(workspace.resolve("src/a.txt"), join(workspace.root, "src", "a.txt"));
  t.is(workspace.resolve(undefined), workspace.root);
  t.is(
    workspace.resolve("src/new/deeper.txt"),
    join(workspace.root, "src", "new", "deeper.txt"),
    "a new file through its deepest existing ancestor",
  );
  t.is(workspace.resolve("inner-link/a.txt"), join(workspace.root, "src", "a.txt"), "a symlink that stays inside");
  t.is(workspace.resolve(join(workspace.root, "src")), join(workspace.root, "src"), "an absolute path inside");
  t.is(workspace.display(join(workspace.root, "src", "a.txt")), "src/a.txt");
  t.is(workspace.display(workspace.root), ".");
});

test("every way out is refused naming the path", async (t) => {
  const { workspace, base } = await layout();
  for (const path of [
    "../outside/secret.txt",
    "src/../../outside",
    join(base, "outside", "secret.txt"),
    "/etc/passwd",
    "file-link",
    "dir-link/secret.txt",
    "dir-link/new.txt",
    "dangling-link",
  ]) {
    const error = t.throws(() => workspace.resolve(path), { instanceOf: PolicyBlock }, path);
    t.is(error?.message, `'${path}' is outside the workspace`);
  }
});

test("another allowed root (configDir may be the data directory)", async (t) => {
  const { workspace, base } = await layout();
  t.is(workspace.resolve(join(base, "outside"), [join(base, "outside")]), join(workspace.root, "..", "outside"));
});
