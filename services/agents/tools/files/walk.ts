// A sorted walk of a directory tree for list_directory, grep and glob: `.git` skipped, symbolic
// links listed but never followed (a link cannot lead the walk out of the jail).
import { type Dirent, readdirSync } from "node:fs";
import { join } from "node:path";

export interface Entry {
  /** Absolute path. */
  path: string;
  directory: boolean;
  /** A symbolic link (never followed; its target may be outside the jail). */
  link: boolean;
  depth: number;
}

/** Every entry under `root` down to `maxDepth` levels (1 = the root's children), sorted by name per directory. */
export function* walk(root: string, maxDepth = Number.POSITIVE_INFINITY, depth = 1): Generator<Entry> {
  if (depth > maxDepth) return;
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name === ".git") continue;
    const path = join(root, entry.name);
    const directory = entry.isDirectory();
    yield { path, directory, link: entry.isSymbolicLink(), depth };
    if (directory) yield* walk(path, maxDepth, depth + 1);
  }
}
