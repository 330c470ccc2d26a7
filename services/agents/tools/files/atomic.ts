// Writes of the file tools: atomic (a temporary file beside the target, then rename), with the
// target's directories created and an existing file's mode kept.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export async function writeAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const mode = await stat(path).then(
    (s) => s.mode & 0o7777,
    () => undefined,
  );
  try {
    await writeFile(temp, content, { flag: "wx" });
    if (mode !== undefined) await chmod(temp, mode);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
