// Files that are either wholly there or not at all: a temp file in the same directory (mode 600,
// created exclusively), written and flushed to disk, then renamed over the target. A reader sees
// the old content or the new, never a part; a crash leaves at most a `.tmp-*` file, which no
// reader looks at.
import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export const TEMP_PREFIX = ".tmp-";

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `${TEMP_PREFIX}${basename(path)}.${randomBytes(6).toString("hex")}`);
  const handle = await open(temp, "wx", mode);
  try {
    try {
      await handle.chmod(mode); // open's mode passes through the umask; this is the mode asked for
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
  await syncDirectory(dir);
}

/** Makes a rename or an unlink durable (the directory entry itself). Not every platform can. */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Windows cannot open a directory for fsync; the rename is still atomic there.
  }
}
