// `meshwork credentials set <name> | list | remove <name> | rotate [--Section:Key=value ...]`: the
// credential store from the command line, without the database or the mesh. The store lives in
// `<AgentGateway:DataDir>/credentials`; AgentGateway:DataDir (default `~/.app`) comes through the
// mesh's own configuration loader, so appsettings*.json, `AgentGateway__DataDir`, the flag
// `--AgentGateway:DataDir=...` and `--environment`/MESHWORK_ENVIRONMENT work as for every setting
// (and an unknown or bad setting stops the command, exit 2, as it stops the mesh). Vault and the
// mounted directory come from APP_VAULT_* and APP_CREDENTIALS_MOUNT_PATH.
// Exit codes: 0 done, 1 failed (one line on stderr), 2 usage or configuration error.
// `set` reads the value from stdin and drops one trailing newline; nothing ever prints a value.
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { Readable, Writable } from "node:stream";
import { z } from "zod";
import {
  ConfigError,
  collectLeaves,
  leavesOf,
  loadConfig,
  renamedRuntimeSettings,
  runtimeSettings,
  type SettingsSchema,
  setting,
} from "../../runtime/config/index.js";
import type { ServiceModule } from "../../runtime/module/index.js";
import { CredentialError, CredentialInputError, checkName, MAX_VALUE_BYTES } from "./errors.js";
import { CredentialStore, credentialBackendsFromEnv } from "./store.js";

export const DATA_DIR_SETTING = "AgentGateway:DataDir";

/**
 * AgentGateway:DataDir for as long as the agents module does not declare it: added to the
 * registered modules' settings for this command only (so the README's table, which lists what the
 * mesh declares, is unchanged). Once a module declares the key, that declaration is used instead.
 */
export const dataDirSettings = z.object({
  agentGateway: z.object({
    dataDir: setting.string({
      default: "~/.app",
      description:
        "The agent gateway's local directory: credentials/ holds the encrypted credential store. A leading ~ is the home directory.",
    }),
  }),
});

export const credentialsUsage = `Usage: meshwork credentials <command> [--Section:Key=value ...]

Commands:
  set <name>      store a credential; the value is read from stdin (one trailing newline dropped)
  list            the names of the stored credentials, one a line
  remove <name>   remove a credential (from Vault and the local files)
  rotate          a new encryption key for the local files; every entry re-encrypted, old keys kept

The store is <AgentGateway:DataDir>/credentials (default ~/.app/credentials); set the directory with
--AgentGateway:DataDir=<dir>, AgentGateway__DataDir or appsettings.json. Vault KV v2 is used first
when APP_VAULT_ADDR is set (with APP_VAULT_TOKEN, APP_VAULT_MOUNT (secret), APP_VAULT_PREFIX);
APP_CREDENTIALS_MOUNT_PATH names a read-only directory with a file per credential, read last.
Names: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or a digit.
Exit codes: 0 done, 1 failed, 2 usage or configuration error.
`;

export interface CredentialsCommandIo {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable;
  stderr: Writable;
  env: Record<string, string | undefined>;
  cwd: string;
}

const defaultIo = (): CredentialsCommandIo => ({
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
});

class UsageError extends Error {}

const arity: Record<string, number> = { set: 1, remove: 1, list: 0, rotate: 0 };

/** Runs the command (args after `credentials`) and returns its exit code. */
export async function runCredentialsCommand(
  args: readonly string[],
  modules: readonly ServiceModule[],
  io: CredentialsCommandIo = defaultIo(),
): Promise<number> {
  const fail = (message: string, code: number) => {
    io.stderr.write(`meshwork credentials: ${message.replace(/\s*\n\s*/g, " ")}\n`);
    return code;
  };
  if (args.includes("--help") || args.includes("-h")) {
    io.stdout.write(credentialsUsage);
    return 0;
  }
  let command: string;
  let name: string | undefined;
  let store: CredentialStore;
  try {
    // Positional words first, then flags (which the configuration loader reads).
    const firstFlag = args.findIndex((a) => a.startsWith("-"));
    const words = firstFlag < 0 ? args : args.slice(0, firstFlag);
    const flags = firstFlag < 0 ? [] : args.slice(firstFlag);
    command = words[0] ?? "";
    if (!(command in arity)) {
      throw new UsageError(
        command ? `unknown command '${command}' (set, list, remove, rotate)` : "a command is needed: set, list, remove or rotate",
      );
    }
    if (words.length - 1 !== arity[command]) {
      throw new UsageError(arity[command] ? `'${command}' takes one credential name` : `'${command}' takes no argument`);
    }
    name = words[1];
    if (name !== undefined) checkName(name);
    const dataDir = loadDataDir({ flags, env: io.env, cwd: io.cwd }, modules);
    store = new CredentialStore({ dataDir, ...credentialBackendsFromEnv(io.env, io.cwd) });
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}; see \`meshwork credentials --help\``, 2);
    if (err instanceof CredentialInputError || err instanceof ConfigError) return fail(err.message, 2);
    throw err;
  }

  try {
    switch (command) {
      case "set": {
        const value = await readValue(io.stdin, io.stderr);
        await store.set(name!, value);
        break;
      }
      case "remove":
        if (!(await store.remove(name!))) return fail("no stored credential by that name (the mounted directory is read-only)", 1);
        break;
      case "list":
        io.stdout.write((await store.list()).map((n) => `${n}\n`).join(""));
        break;
      case "rotate": {
        const { keyId, reencrypted } = await store.rotate();
        io.stdout.write(`active key ${keyId}; ${reencrypted} ${reencrypted === 1 ? "entry" : "entries"} re-encrypted\n`);
        break;
      }
    }
    return 0;
  } catch (err) {
    if (err instanceof CredentialError) return fail(err.message, 1);
    // A file system error names its path (a hash, never a name) and its code; anything else only its kind.
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === "string" && err instanceof Error) return fail(err.message, 1);
    return fail(`unexpected failure (${err instanceof Error ? err.name : typeof err})`, 1);
  }
}

/** The whole of stdin as UTF-8, one trailing newline (`\n` or `\r\n`) dropped. */
async function readValue(stdin: Readable & { isTTY?: boolean }, stderr: Writable): Promise<string> {
  if (stdin.isTTY) stderr.write("Type the value, then a newline and Ctrl-D:\n");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : (chunk as Buffer);
    size += bytes.length;
    // One byte of slack: the trailing newline that is not part of the value.
    if (size > MAX_VALUE_BYTES + 2) throw new CredentialInputError(`the value on stdin is larger than ${MAX_VALUE_BYTES} bytes`);
    chunks.push(bytes);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new CredentialInputError("the value on stdin is not UTF-8 text");
  }
  const value = text.replace(/\r?\n$/, "");
  if (value === "") throw new CredentialInputError("no value on stdin");
  return value;
}

/**
 * AgentGateway:DataDir as the mesh's loader reads it (every registered module's settings, so that
 * their keys in appsettings.json or the environment are known and checked), as an absolute path:
 * `~` and `~/...` are the home directory, a relative path is taken from `cwd`.
 */
export function loadDataDir(
  options: { flags: readonly string[]; env: Record<string, string | undefined>; cwd: string },
  modules: readonly ServiceModule[],
): string {
  const schemas: SettingsSchema[] = [runtimeSettings, ...modules.map((m) => m.settings)];
  const key = DATA_DIR_SETTING.toLowerCase();
  const leaf = collectLeaves(schemas).find((l) => l.key.toLowerCase() === key) ?? leavesOf(dataDirSettings)[0]!;
  if (leaf.owner === dataDirSettings) schemas.push(dataDirSettings);
  const renamed = Object.assign({}, renamedRuntimeSettings, ...modules.map((m) => m.renamedSettings ?? {}));
  const config = loadConfig({ schemas, renamed, flags: options.flags, env: options.env, cwd: options.cwd });
  let value: unknown = config.get(leaf.owner);
  for (const segment of leaf.path) value = (value as Record<string, unknown>)[segment];
  return expandDataDir(String(value), options.cwd, options.env);
}

export function expandDataDir(value: string, cwd: string, env: Record<string, string | undefined> = process.env): string {
  const home = env.HOME || homedir();
  if (value === "~") return home;
  if (value.startsWith("~/") || value.startsWith("~\\")) return join(home, value.slice(2));
  return isAbsolute(value) ? value : resolve(cwd, value);
}
