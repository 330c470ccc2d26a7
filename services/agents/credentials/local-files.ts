// The encrypted file store under `<DataDir>/credentials` (directory 700, files 600):
//   keyring.json        { activeKeyId, keys: [{ id, key, createdAt }] }, key = base64 of 32 random bytes
//   <sha256(name)>.json { version: 1, keyId, nonce, ciphertext, tag }, base64; AES-256-GCM with the
//                       keyring's key `keyId`, a fresh 12-byte nonce per write, a 16-byte tag, no AAD,
//                       over the UTF-8 JSON { name, value, updatedAt }
// Every file is replaced atomically (atomic-file.ts). Writers (set, remove, rotate, and the keyring's
// creation by the first of them) hold `.lock`, a file created exclusively, so the gateway and the
// `meshwork credentials` command can write at once without losing a key or an update; readers take
// no lock and read the keyring afresh, so a rotation made by another process is seen at once. A
// lock whose holder died is broken: at once when it was this host's process, after `lockStaleMs`
// without its holder touching it otherwise (a volume shared between hosts).
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import { chmod, link, mkdir, readdir, readFile, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { syncDirectory, TEMP_PREFIX, writeFileAtomic } from "./atomic-file.js";
import { LocalStoreError, nameHash } from "./errors.js";

export interface KeyringKey {
  id: string;
  /** Base64 of 32 random bytes. */
  key: string;
  createdAt: string;
}

export interface Keyring {
  activeKeyId: string;
  keys: KeyringKey[];
}

export interface EntryFile {
  version: 1;
  keyId: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

interface Plaintext {
  name: string;
  value: string;
  updatedAt: string;
}

export interface LocalFilesOptions {
  now?: () => Date;
  /** How long a writer waits for another's lock before giving up (default 10 s). */
  lockTimeoutMs?: number;
  /** A lock untouched for this long was left by a process that died (default 30 s; holders touch it every third of that). */
  lockStaleMs?: number;
}

export const KEYRING_FILE = "keyring.json";
export const LOCK_FILE = ".lock";
const ENTRY_FILE = /^[0-9a-f]{64}\.json$/;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

export class LocalCredentialFiles {
  readonly #now: () => Date;
  readonly #lockTimeoutMs: number;
  readonly #lockStaleMs: number;
  /** Writers of this process queue here before taking the file lock. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    options: LocalFilesOptions = {},
  ) {
    this.#now = options.now ?? (() => new Date());
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.#lockStaleMs = options.lockStaleMs ?? 30_000;
  }

  /** Creates the directory (and the data directory above it) and sets its mode to 700. */
  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const mode = (await stat(this.dir)).mode & 0o777;
    if (mode !== 0o700) await chmod(this.dir, 0o700);
  }

  async get(name: string): Promise<string | undefined> {
    const hash = nameHash(name);
    const entry = await this.#readEntry(hash);
    if (!entry) return undefined;
    return this.#decrypt(entry, hash, await this.#requireKeyring()).value;
  }

  async set(name: string, value: string): Promise<void> {
    await this.#exclusive(async () => {
      const keyring = (await this.#readKeyring()) ?? (await this.#createKeyring());
      const plaintext: Plaintext = { name, value, updatedAt: this.#now().toISOString() };
      await this.#writeEntry(nameHash(name), this.#encrypt(plaintext, keyring));
    });
  }

  /** True when there was an entry to remove. */
  async remove(name: string): Promise<boolean> {
    return this.#exclusive(async () => {
      try {
        await unlink(join(this.dir, `${nameHash(name)}.json`));
      } catch (err) {
        if (errno(err) === "ENOENT") return false;
        throw err;
      }
      await syncDirectory(this.dir);
      return true;
    });
  }

  async list(): Promise<string[]> {
    const names: string[] = [];
    let keyring: Keyring | undefined;
    for (const hash of await this.#entryHashes()) {
      const entry = await this.#readEntry(hash);
      if (!entry) continue; // removed since the directory was read
      keyring ??= await this.#requireKeyring();
      names.push(this.#decrypt(entry, hash, keyring).name);
    }
    return names.sort();
  }

  /**
   * A new key becomes the active one (the old ones stay in the keyring) and every entry is
   * re-encrypted under it, `updatedAt` unchanged. The keyring is written first: an interruption
   * leaves some entries under an older key, which still decrypts; running rotate again finishes.
   * With no keyring yet, the keyring is created with its first key.
   */
  async rotate(): Promise<{ keyId: string; reencrypted: number }> {
    return this.#exclusive(async () => {
      const existing = await this.#readKeyring();
      if (!existing) return { keyId: (await this.#createKeyring()).activeKeyId, reencrypted: 0 };
      const key = newKey(this.#now());
      const keyring: Keyring = { activeKeyId: key.id, keys: [...existing.keys, key] };
      await writeFileAtomic(join(this.dir, KEYRING_FILE), `${JSON.stringify(keyring, null, 2)}\n`);
      let reencrypted = 0;
      for (const hash of await this.#entryHashes()) {
        const entry = await this.#readEntry(hash);
        if (!entry) continue;
        await this.#writeEntry(hash, this.#encrypt(this.#decrypt(entry, hash, keyring), keyring));
        reencrypted++;
      }
      return { keyId: key.id, reencrypted };
    });
  }

  // --- keyring ---

  async #readKeyring(): Promise<Keyring | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.dir, KEYRING_FILE), "utf8");
    } catch (err) {
      if (errno(err) === "ENOENT") return undefined;
      throw err;
    }
    return parseKeyring(text);
  }

  async #requireKeyring(): Promise<Keyring> {
    const keyring = await this.#readKeyring();
    if (!keyring) throw new LocalStoreError(`${KEYRING_FILE} is missing from ${this.dir}, so its entries cannot be decrypted`);
    return keyring;
  }

  async #createKeyring(): Promise<Keyring> {
    const key = newKey(this.#now());
    const keyring: Keyring = { activeKeyId: key.id, keys: [key] };
    await writeFileAtomic(join(this.dir, KEYRING_FILE), `${JSON.stringify(keyring, null, 2)}\n`);
    return keyring;
  }

  // --- entries ---

  async #entryHashes(): Promise<string[]> {
    let files: string[];
    try {
      files = await readdir(this.dir);
    } catch (err) {
      if (errno(err) === "ENOENT") return [];
      throw err;
    }
    return files
      .filter((f) => ENTRY_FILE.test(f))
      .map((f) => f.slice(0, 64))
      .sort();
  }

  async #readEntry(hash: string): Promise<EntryFile | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.dir, `${hash}.json`), "utf8");
    } catch (err) {
      if (errno(err) === "ENOENT") return undefined;
      throw err;
    }
    return parseEntry(text, hash);
  }

  async #writeEntry(hash: string, entry: EntryFile): Promise<void> {
    await writeFileAtomic(join(this.dir, `${hash}.json`), `${JSON.stringify(entry)}\n`);
  }

  #encrypt(plaintext: Plaintext, keyring: Keyring): EntryFile {
    const key = keyring.keys.find((k) => k.id === keyring.activeKeyId)!;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", Buffer.from(key.key, "base64"), nonce, { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(plaintext), "utf8"), cipher.final()]);
    return {
      version: 1,
      keyId: key.id,
      nonce: nonce.toString("base64"),
      ciphertext: ciphertext.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
    };
  }

  #decrypt(entry: EntryFile, hash: string, keyring: Keyring): Plaintext {
    const damaged = (why: string) => new LocalStoreError(`credential file ${hash}.json cannot be decrypted: ${why}`);
    const key = keyring.keys.find((k) => k.id === entry.keyId);
    if (!key) throw damaged(`its key id is not in ${KEYRING_FILE}`);
    let bytes: Buffer;
    try {
      const decipher = createDecipheriv("aes-256-gcm", Buffer.from(key.key, "base64"), Buffer.from(entry.nonce, "base64"), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAuthTag(Buffer.from(entry.tag, "base64"));
      bytes = Buffer.concat([decipher.update(Buffer.from(entry.ciphertext, "base64")), decipher.final()]);
    } catch {
      throw damaged("authentication failed (the file or the key was altered)");
    }
    let plaintext: Partial<Plaintext>;
    try {
      plaintext = JSON.parse(bytes.toString("utf8")) as Partial<Plaintext>;
    } catch {
      throw damaged("its content is not the expected JSON"); // never JSON.parse's message: it quotes the text
    }
    if (typeof plaintext.name !== "string" || typeof plaintext.value !== "string" || typeof plaintext.updatedAt !== "string") {
      throw damaged("its content lacks name, value or updatedAt");
    }
    if (nameHash(plaintext.name) !== hash) throw damaged("it holds another name than its file name says");
    return { name: plaintext.name, value: plaintext.value, updatedAt: plaintext.updatedAt };
  }

  // --- the writers' lock ---

  /** Runs `fn` holding this process's queue and the directory's `.lock`. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      await this.prepare();
      return this.#withFileLock(fn);
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #withFileLock<T>(fn: () => Promise<T>): Promise<T> {
    const path = join(this.dir, LOCK_FILE);
    const token = `${process.pid}@${hostname()} ${randomBytes(8).toString("hex")}\n`;
    const deadline = Date.now() + this.#lockTimeoutMs;
    let lastTry = false;
    for (;;) {
      // The lock appears with its holder written in it (a link to a written file, refused when the
      // lock exists), so that no crash leaves a lock that does not say whose it is.
      const candidate = join(this.dir, `${TEMP_PREFIX}lock.${randomBytes(6).toString("hex")}`);
      try {
        await writeFile(candidate, token, { flag: "wx", mode: 0o600 });
        await link(candidate, path).catch(async (err: unknown) => {
          // A file system without hard links: an exclusive create, then the holder.
          if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"].includes(errno(err) ?? "")) throw err;
          await writeFile(path, token, { flag: "wx", mode: 0o600 });
        });
        break;
      } catch (err) {
        // ENOENT: a lock holder cleared the candidate as a dead writer's temp file; try again.
        if (errno(err) !== "EEXIST" && errno(err) !== "ENOENT") throw err;
      } finally {
        await unlink(candidate).catch(() => {});
      }
      const broken = await this.#breakIfStale(path);
      // Past the deadline, one last try right after a lock went away, no more.
      if (Date.now() >= deadline && (!broken || lastTry)) {
        throw new LocalStoreError(`the credential store is busy: another process holds ${path}; try again`);
      }
      lastTry = Date.now() >= deadline;
      if (!broken) await sleep(10 + Math.floor(Math.random() * 20));
    }
    // Temp files exist only while their writer holds the lock: any there now were left by a writer that died.
    for (const file of await readdir(this.dir)) {
      if (file.startsWith(TEMP_PREFIX)) await unlink(join(this.dir, file)).catch(() => {});
    }
    // A long rotation keeps its lock fresh so that nobody takes it for a dead process's.
    const touch = setInterval(() => {
      const now = new Date();
      void utimes(path, now, now).catch(() => {});
    }, this.#lockStaleMs / 3);
    touch.unref();
    try {
      return await fn();
    } finally {
      clearInterval(touch);
      // Only our own lock: had ours been taken for stale, the file now belongs to someone else.
      const holder = await readFile(path, "utf8").catch(() => undefined);
      if (holder === token) await unlink(path).catch(() => {});
    }
  }

  /** True when the lock is gone (broken here, or released meanwhile): worth trying again at once. */
  async #breakIfStale(path: string): Promise<boolean> {
    try {
      const before = await stat(path);
      const holder = await readFile(path, "utf8");
      if (Date.now() - before.mtimeMs < this.#lockStaleMs && !holderIsGone(holder)) return false;
      const after = await stat(path);
      // Still the same, untouched file: its holder is gone.
      if (after.ino !== before.ino || after.mtimeMs !== before.mtimeMs || (await readFile(path, "utf8")) !== holder) return false;
      await unlink(path);
      return true;
    } catch (err) {
      if (errno(err) === "ENOENT") return true;
      throw err;
    }
  }
}

/**
 * A lock written on this host by a process that no longer exists (`<pid>@<host> <token>`). On
 * another host (a shared volume) nothing can be known and only the lock's age tells.
 */
function holderIsGone(holder: string): boolean {
  const match = /^(\d+)@(\S+) /.exec(holder);
  if (!match || match[2] !== hostname()) return false;
  const pid = Number(match[1]);
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return errno(err) === "ESRCH";
  }
}

function newKey(now: Date): KeyringKey {
  return { id: randomUUID(), key: randomBytes(KEY_BYTES).toString("base64"), createdAt: now.toISOString() };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function base64Length(value: unknown): number | undefined {
  if (typeof value !== "string" || !BASE64.test(value)) return undefined;
  return Buffer.from(value, "base64").length;
}

export function parseKeyring(text: string): Keyring {
  const damaged = (why: string) => new LocalStoreError(`${KEYRING_FILE} is damaged: ${why}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw damaged("it is not JSON"); // never JSON.parse's message: it quotes the text, keys included
  }
  const keyring = raw as Partial<Keyring> | null;
  if (!keyring || typeof keyring !== "object" || !Array.isArray(keyring.keys) || typeof keyring.activeKeyId !== "string") {
    throw damaged("it lacks activeKeyId or keys");
  }
  const ids = new Set<string>();
  const keys: KeyringKey[] = [];
  for (const [i, key] of keyring.keys.entries()) {
    const k = key as Partial<KeyringKey> | null;
    if (!k || typeof k.id !== "string" || k.id === "" || typeof k.createdAt !== "string") throw damaged(`key ${i} lacks id or createdAt`);
    if (base64Length(k.key) !== KEY_BYTES) throw damaged(`key ${i} is not the base64 of ${KEY_BYTES} bytes`);
    if (ids.has(k.id)) throw damaged(`key id ${k.id} appears twice`);
    ids.add(k.id);
    keys.push({ id: k.id, key: k.key!, createdAt: k.createdAt });
  }
  if (!ids.has(keyring.activeKeyId)) throw damaged("activeKeyId names no key");
  return { activeKeyId: keyring.activeKeyId, keys };
}

function parseEntry(text: string, hash: string): EntryFile {
  const damaged = (why: string) => new LocalStoreError(`credential file ${hash}.json is damaged: ${why}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw damaged("it is not JSON");
  }
  const entry = raw as Partial<EntryFile> | null;
  if (!entry || typeof entry !== "object") throw damaged("it is not a JSON object");
  if (entry.version !== 1) throw damaged(`version ${String(JSON.stringify(entry.version)).slice(0, 20)} is not 1`);
  if (typeof entry.keyId !== "string") throw damaged("it lacks keyId");
  if (base64Length(entry.nonce) !== NONCE_BYTES) throw damaged(`its nonce is not ${NONCE_BYTES} bytes of base64`);
  if (base64Length(entry.tag) !== TAG_BYTES) throw damaged(`its tag is not ${TAG_BYTES} bytes of base64`);
  if (base64Length(entry.ciphertext) === undefined) throw damaged("its ciphertext is not base64");
  return { version: 1, keyId: entry.keyId, nonce: entry.nonce!, ciphertext: entry.ciphertext!, tag: entry.tag! };
}
