// The agent gateway's credential store: Vault KV v2 first (when APP_VAULT_ADDR is set), then the
// encrypted files under `<DataDir>/credentials`, then the read-only mounted directory
// (APP_CREDENTIALS_MOUNT_PATH). Every backend consulted adds one line to
// `<DataDir>/credentials/access.audit.log`. The rules, operation by operation, are in README.md
// next to this file; in short: reads fall back past a failing Vault, writes never do.
import { appendFile, chmod, stat } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { ConfigError } from "../../runtime/config/index.js";
import { checkName, checkValue, nameHash } from "./errors.js";
import { LocalCredentialFiles } from "./local-files.js";
import { MountedCredentials } from "./mounted.js";
import { VaultKv2Client, type VaultOptions } from "./vault.js";

export type CredentialBackend = "vault" | "local" | "mounted";
export type CredentialOperation = "get" | "set" | "remove" | "list" | "rotate";

/** One line of access.audit.log. */
export interface CredentialAuditRecord {
  timestamp: string;
  operation: CredentialOperation;
  /** SHA-256 hex of the credential's name; null for list and rotate. */
  keyHash: string | null;
  backend: CredentialBackend;
  /**
   * The backend did what was asked: get, it returned the value (false when it has none or
   * failed); set, it stored it; remove, it no longer holds it (also when it never did); list, it
   * listed; rotate, it rotated.
   */
  success: boolean;
}

export interface CredentialStoreOptions {
  /** AgentGateway:DataDir (absolute); the store lives in `<dataDir>/credentials`. */
  dataDir: string;
  /** Vault KV v2, consulted first; from APP_VAULT_* (credentialBackendsFromEnv). */
  vault?: VaultOptions;
  /** The read-only mounted directory, consulted last; APP_CREDENTIALS_MOUNT_PATH. */
  mountPath?: string;
  now?: () => Date;
  lockTimeoutMs?: number;
  lockStaleMs?: number;
}

export const CREDENTIALS_DIR = "credentials";
export const AUDIT_LOG = "access.audit.log";

type Consult = <R>(backend: CredentialBackend, fn: () => Promise<R>, succeeded?: (result: R) => boolean) => Promise<R>;

export class CredentialStore {
  /** `<dataDir>/credentials`. */
  readonly dir: string;
  readonly auditLogPath: string;
  readonly #local: LocalCredentialFiles;
  readonly #vault: VaultKv2Client | undefined;
  readonly #mounted: MountedCredentials | undefined;
  readonly #now: () => Date;
  #auditModeChecked = false;

  constructor(options: CredentialStoreOptions) {
    this.dir = join(options.dataDir, CREDENTIALS_DIR);
    this.auditLogPath = join(this.dir, AUDIT_LOG);
    this.#now = options.now ?? (() => new Date());
    this.#local = new LocalCredentialFiles(this.dir, {
      now: this.#now,
      lockTimeoutMs: options.lockTimeoutMs,
      lockStaleMs: options.lockStaleMs,
    });
    this.#vault = options.vault ? new VaultKv2Client(options.vault) : undefined;
    this.#mounted = options.mountPath ? new MountedCredentials(options.mountPath) : undefined;
  }

  /** The backends in the order reads consult them. */
  get backends(): CredentialBackend[] {
    return [...(this.#vault ? (["vault"] as const) : []), "local", ...(this.#mounted ? (["mounted"] as const) : [])];
  }

  /** The value and the backend that had it; undefined when none has it. */
  async lookup(name: string): Promise<{ value: string; backend: CredentialBackend } | undefined> {
    checkName(name);
    return this.#run("get", nameHash(name), async (consult) => {
      const readers: [CredentialBackend, { get(name: string): Promise<string | undefined> } | undefined][] = [
        ["vault", this.#vault],
        ["local", this.#local],
        ["mounted", this.#mounted],
      ];
      let failure: unknown;
      for (const [backend, reader] of readers) {
        if (!reader) continue;
        try {
          const value = await consult(
            backend,
            () => reader.get(name),
            (v) => v !== undefined,
          );
          if (value !== undefined) return { value, backend };
        } catch (err) {
          failure ??= err; // fall back to the next backend
        }
      }
      // Nobody had it, but a backend could not say: the credential may well exist there.
      if (failure) throw failure;
      return undefined;
    });
  }

  async get(name: string): Promise<string | undefined> {
    return (await this.lookup(name))?.value;
  }

  /** Vault (when configured), then the local files; a Vault failure stops it before the files. */
  async set(name: string, value: string): Promise<void> {
    checkName(name);
    checkValue(value);
    await this.#run("set", nameHash(name), async (consult) => {
      const vault = this.#vault;
      if (vault) await consult("vault", () => vault.set(name, value));
      await consult("local", () => this.#local.set(name, value));
    });
  }

  /** Removes it from Vault (when configured), then from the local files; true when either held it. */
  async remove(name: string): Promise<boolean> {
    checkName(name);
    return this.#run("remove", nameHash(name), async (consult) => {
      const vault = this.#vault;
      const inVault = vault ? await consult("vault", () => vault.remove(name)) : false;
      const inFiles = await consult("local", () => this.#local.remove(name));
      return inVault || inFiles;
    });
  }

  /** Every name any backend holds, sorted, each once. Any backend failing fails the list. */
  async list(): Promise<string[]> {
    return this.#run("list", null, async (consult) => {
      const names = new Set<string>();
      const vault = this.#vault;
      const mounted = this.#mounted;
      if (vault) for (const name of await consult("vault", () => vault.list())) names.add(name);
      for (const name of await consult("local", () => this.#local.list())) names.add(name);
      if (mounted) for (const name of await consult("mounted", () => mounted.list())) names.add(name);
      return [...names].sort();
    });
  }

  /** A new active key for the local files, every entry re-encrypted under it, old keys kept. */
  async rotate(): Promise<{ keyId: string; reencrypted: number }> {
    return this.#run("rotate", null, (consult) => consult("local", () => this.#local.rotate()));
  }

  async #run<T>(operation: CredentialOperation, keyHash: string | null, body: (consult: Consult) => Promise<T>): Promise<T> {
    await this.#local.prepare();
    const records: CredentialAuditRecord[] = [];
    const consult: Consult = async (backend, fn, succeeded = () => true) => {
      const record = (success: boolean) => records.push({ timestamp: this.#now().toISOString(), operation, keyHash, backend, success });
      try {
        const result = await fn();
        record(succeeded(result));
        return result;
      } catch (err) {
        record(false);
        throw err;
      }
    };
    let result: T;
    try {
      result = await body(consult);
    } catch (err) {
      await this.#audit(records).catch(() => {}); // the operation's own error is the one to report
      throw err;
    }
    // An access that cannot be audited fails: the caller gets no value the log does not show.
    await this.#audit(records);
    return result;
  }

  async #audit(records: CredentialAuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    // One append (O_APPEND) per operation: lines of concurrent processes never interleave.
    await appendFile(this.auditLogPath, records.map((r) => `${JSON.stringify(r)}\n`).join(""), { mode: 0o600 });
    if (!this.#auditModeChecked) {
      if (((await stat(this.auditLogPath)).mode & 0o777) !== 0o600) await chmod(this.auditLogPath, 0o600);
      this.#auditModeChecked = true;
    }
  }
}

/**
 * The optional backends from the environment: APP_VAULT_ADDR (an http or https URL; with it
 * APP_VAULT_TOKEN is required), APP_VAULT_MOUNT (default `secret`), APP_VAULT_PREFIX (default
 * none), APP_CREDENTIALS_MOUNT_PATH (relative to `cwd`). Empty counts as unset. A bad value is a
 * ConfigError naming the variable, never the token.
 */
export function credentialBackendsFromEnv(
  env: Record<string, string | undefined>,
  cwd: string = process.cwd(),
): Pick<CredentialStoreOptions, "vault" | "mountPath"> {
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v === undefined || v === "" ? undefined : v;
  };
  const out: Pick<CredentialStoreOptions, "vault" | "mountPath"> = {};
  const addr = value("APP_VAULT_ADDR");
  if (addr) {
    let url: URL | undefined;
    try {
      url = new URL(addr);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw new ConfigError("Invalid environment variable APP_VAULT_ADDR: expected an http:// or https:// URL of Vault.");
    }
    const token = value("APP_VAULT_TOKEN");
    if (!token) throw new ConfigError("APP_VAULT_ADDR is set but APP_VAULT_TOKEN is not: Vault needs a token.");
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw new ConfigError("Invalid environment variable APP_VAULT_TOKEN: it holds characters an HTTP header cannot carry.");
    }
    out.vault = { addr, token, mount: value("APP_VAULT_MOUNT") ?? "secret", prefix: value("APP_VAULT_PREFIX") ?? "" };
  }
  const mountPath = value("APP_CREDENTIALS_MOUNT_PATH");
  if (mountPath) out.mountPath = isAbsolute(mountPath) ? mountPath : resolve(cwd, mountPath);
  return out;
}
