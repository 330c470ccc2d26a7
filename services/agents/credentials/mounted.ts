// The read-only mounted directory (`APP_CREDENTIALS_MOUNT_PATH`): a file per credential, named by
// the credential, holding its value; one trailing newline (`\n` or `\r\n`) is not part of it. This
// is the layout of a Kubernetes secret mounted as a volume (its `..data` link and timestamped
// folder start with a dot and are no credential names, so they are skipped).
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { CREDENTIAL_NAME, MountedCredentialsError } from "./errors.js";

const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

export class MountedCredentials {
  constructor(readonly dir: string) {}

  async get(name: string): Promise<string | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.dir, name), "utf8");
    } catch (err) {
      const code = errno(err);
      if (code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR") {
        await this.#requireDirectory();
        return undefined;
      }
      throw new MountedCredentialsError(`cannot read a file in the mounted credentials directory ${this.dir} (${code ?? "error"})`);
    }
    return text.replace(/\r?\n$/, "");
  }

  async list(): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.dir);
    } catch (err) {
      throw this.#unreadable(err);
    }
    const names: string[] = [];
    for (const name of entries) {
      if (!CREDENTIAL_NAME.test(name)) continue;
      // Kubernetes' files are symbolic links into `..data`: stat follows them.
      const info = await stat(join(this.dir, name)).catch(() => undefined);
      if (info?.isFile()) names.push(name);
    }
    return names.sort();
  }

  async #requireDirectory(): Promise<void> {
    try {
      if (!(await stat(this.dir)).isDirectory()) throw Object.assign(new Error(), { code: "ENOTDIR" });
    } catch (err) {
      throw this.#unreadable(err);
    }
  }

  #unreadable(err: unknown): MountedCredentialsError {
    const code = errno(err);
    const why = code === "ENOENT" ? "does not exist" : code === "ENOTDIR" ? "is not a directory" : `cannot be read (${code ?? "error"})`;
    return new MountedCredentialsError(`the mounted credentials directory ${this.dir} (APP_CREDENTIALS_MOUNT_PATH) ${why}`);
  }
}
