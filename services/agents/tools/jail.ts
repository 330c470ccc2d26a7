// The workspace jail: every path argument, cwd and configDir of a tool resolves inside
// `Tools:WorkspaceRoot`. Paths resolve by realpath (a path that does not exist yet through its
// deepest existing ancestor), so `..`, an absolute path outside, and a symlink (file or directory)
// pointing out are all refused with PolicyBlock before anything is read or written.
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { PolicyBlock } from "./tool.js";

export class Workspace {
  readonly root: string;

  /** `root` must exist (see `Workspace.open`); it is resolved by realpath once. */
  constructor(root: string) {
    this.root = realpathSync(root);
  }

  static async open(root: string): Promise<Workspace> {
    await mkdir(root, { recursive: true });
    return new Workspace(root);
  }

  /**
   * The real absolute path of `path` (relative to the root, or absolute), or PolicyBlock
   * `'<path>' is outside the workspace`. `also` lists other roots allowed for this argument
   * (configDir may be the data directory).
   */
  resolve(path: string | undefined, also: readonly string[] = []): string {
    const given = path === undefined || path === "" ? "." : path;
    const real = realOf(isAbsolute(given) ? given : resolve(this.root, given));
    for (const root of [this.root, ...also.map(realOf)]) if (inside(root, real)) return real;
    throw new PolicyBlock(`'${given}' is outside the workspace`);
  }

  /** `absolute` as printed to the model: relative to the root, `.` for the root itself. */
  display(absolute: string): string {
    const rel = relative(this.root, absolute);
    return rel === "" ? "." : rel.split(sep).join("/");
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** realpath of the deepest existing ancestor, with the rest of the path appended. */
function realOf(path: string): string {
  const missing: string[] = [];
  let at = resolve(path);
  for (;;) {
    try {
      return join(realpathSync(at), ...missing.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" && (error as NodeJS.ErrnoException).code !== "ENOTDIR") throw error;
      // A dangling symlink: a write through it lands where it points, so that is the path.
      const link = symlinkTarget(at);
      if (link !== undefined) {
        at = resolve(dirname(at), link);
        continue;
      }
      const parent = dirname(at);
      if (parent === at) return join(at, ...missing.reverse());
      missing.push(basename(at));
      at = parent;
    }
  }
}

function symlinkTarget(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined;
  } catch {
    return undefined;
  }
}
