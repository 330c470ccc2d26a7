// The credential store's local files, mounted directory and audit log. Every file is read back
// with node:crypto here, not through the store: the format is the contract, not the code.
import test from "ava";
import { spawn, spawnSync } from "node:child_process";
import { createDecipheriv, createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  watch,
  writeFileSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { CredentialStore, LocalStoreError, MountedCredentialsError } from "./index.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

function tempDir(t: { teardown(fn: () => void): void }, prefix = "meshwork-creds-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface KeyringJson {
  activeKeyId: string;
  keys: { id: string; key: string; createdAt: string }[];
}

interface EntryJson {
  version: number;
  keyId: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;

/** Decrypts an entry file with node:crypto alone, as the interface describes it. */
function decryptFile(credentialsDir: string, name: string): { name: string; value: string; updatedAt: string } {
  const keyring = readJson<KeyringJson>(join(credentialsDir, "keyring.json"));
  const entry = readJson<EntryJson>(join(credentialsDir, `${sha256(name)}.json`));
  return decryptEntry(keyring, entry);
}

function decryptEntry(keyring: KeyringJson, entry: EntryJson): { name: string; value: string; updatedAt: string } {
  const key = keyring.keys.find((k) => k.id === entry.keyId);
  if (!key) throw new Error(`key ${entry.keyId} is not in the keyring`);
  const decipher = createDecipheriv("aes-256-gcm", Buffer.from(key.key, "base64"), Buffer.from(entry.nonce, "base64"));
  decipher.setAuthTag(Buffer.from(entry.tag, "base64"));
  const plain = Buffer.concat([decipher.update(Buffer.from(entry.ciphertext, "base64")), decipher.final()]);
  return JSON.parse(plain.toString("utf8"));
}

const mode = (path: string) => statSync(path).mode & 0o777;

function auditLines(store: CredentialStore): Record<string, unknown>[] {
  if (!existsSync(store.auditLogPath)) return [];
  return readFileSync(store.auditLogPath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/** Every byte under `dir`, as text, to search for names and values that must not be there. */
function everything(dir: string): string {
  let all = "";
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name);
    all += `${path}\n`;
    if (entry.isFile()) all += readFileSync(path, "latin1") + readFileSync(path, "utf8");
  }
  return all;
}

test("set writes keyring.json and an entry file that node:crypto decrypts as the interface says", async (t) => {
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir });
  const before = Date.now();
  await store.set("provider.openai", "sk-live-abc123");
  const dir = join(dataDir, "credentials");
  t.is(store.dir, dir);

  const keyring = readJson<KeyringJson>(join(dir, "keyring.json"));
  t.deepEqual(Object.keys(keyring).sort(), ["activeKeyId", "keys"]);
  t.is(keyring.keys.length, 1);
  t.deepEqual(Object.keys(keyring.keys[0]!).sort(), ["createdAt", "id", "key"]);
  t.is(keyring.keys[0]!.id, keyring.activeKeyId);
  t.is(Buffer.from(keyring.keys[0]!.key, "base64").length, 32);
  t.true(Date.parse(keyring.keys[0]!.createdAt) >= before - 1000);

  const entry = readJson<EntryJson>(join(dir, `${sha256("provider.openai")}.json`));
  t.deepEqual(Object.keys(entry), ["version", "keyId", "nonce", "ciphertext", "tag"]);
  t.is(entry.version, 1);
  t.is(entry.keyId, keyring.activeKeyId);
  t.is(Buffer.from(entry.nonce, "base64").length, 12);
  t.is(Buffer.from(entry.tag, "base64").length, 16);

  const plain = decryptFile(dir, "provider.openai");
  t.deepEqual(Object.keys(plain), ["name", "value", "updatedAt"]);
  t.is(plain.name, "provider.openai");
  t.is(plain.value, "sk-live-abc123");
  t.true(Date.parse(plain.updatedAt) >= before - 1000);

  t.is(await store.get("provider.openai"), "sk-live-abc123");
  t.deepEqual(await store.lookup("provider.openai"), { value: "sk-live-abc123", backend: "local" });
  t.is(await store.get("provider.other"), undefined);
  t.deepEqual(await store.list(), ["provider.openai"]);
});

test("a value survives any text (newlines, unicode, 1 MiB) and a second set replaces it with a fresh nonce", async (t) => {
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir });
  const dir = join(dataDir, "credentials");
  const odd = '-----BEGIN KEY-----\nline "two"\r\n\tünïcødé 🔑\n';
  await store.set("pem", odd);
  t.is(decryptFile(dir, "pem").value, odd);
  const first = readJson<EntryJson>(join(dir, `${sha256("pem")}.json`));
  await store.set("pem", "second");
  const second = readJson<EntryJson>(join(dir, `${sha256("pem")}.json`));
  t.not(second.nonce, first.nonce);
  t.is(await store.get("pem"), "second");
  const big = "x".repeat(1024 * 1024);
  await store.set("big", big);
  t.is(decryptFile(dir, "big").value, big);
  await t.throwsAsync(store.set("big", `${big}y`), { message: /larger than 1048576 bytes/ });
  await t.throwsAsync(store.set("empty", ""), { message: /empty/ });
});

test("names are checked: no path, no dot start, at most 128 characters", async (t) => {
  const store = new CredentialStore({ dataDir: tempDir(t) });
  for (const bad of ["", "../x", "a/b", ".hidden", "-x", "a b", "é", "x".repeat(129)]) {
    await t.throwsAsync(store.set(bad, "v"), { message: /invalid credential name/ }, JSON.stringify(bad));
    await t.throwsAsync(store.get(bad), { message: /invalid credential name/ });
  }
  await store.set("A-z_0.9", "v");
  await store.set("x".repeat(128), "v");
  t.deepEqual(await store.list(), ["A-z_0.9", "x".repeat(128)]);
});

test.serial("the directory is 700 and every file 600, whatever the umask and the directory's mode before", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const old = process.umask(0);
  t.teardown(() => process.umask(old));
  const store = new CredentialStore({ dataDir });
  await store.set("a", "1");
  await store.set("b", "2");
  await store.rotate();
  process.umask(old);
  t.is(mode(dir), 0o700);
  const files = readdirSync(dir);
  t.deepEqual(files.sort(), ["access.audit.log", "keyring.json", `${sha256("a")}.json`, `${sha256("b")}.json`].sort());
  for (const file of files) t.is(mode(join(dir, file)), 0o600, file);

  // A data directory that does not exist yet is made 700 as well.
  const fresh = join(tempDir(t), "nested", "app");
  await new CredentialStore({ dataDir: fresh }).list();
  t.is(mode(join(fresh, "credentials")), 0o700);
  t.is(mode(fresh), 0o700);
});

test("rotate: a new active key, old keys kept, every entry re-encrypted under it, values and updatedAt unchanged", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const store = new CredentialStore({ dataDir });
  const names = ["provider.openai", "provider.assistant", "mcp.github"];
  for (const [i, name] of names.entries()) await store.set(name, `value-${i}`);
  const before = readJson<KeyringJson>(join(dir, "keyring.json"));
  const entriesBefore = names.map((n) => readJson<EntryJson>(join(dir, `${sha256(n)}.json`)));
  const plainBefore = names.map((n) => decryptFile(dir, n));

  const result = await store.rotate();
  t.is(result.reencrypted, 3);
  const after = readJson<KeyringJson>(join(dir, "keyring.json"));
  t.is(after.keys.length, 2);
  t.deepEqual(after.keys[0], before.keys[0], "the old key is kept as it was");
  t.is(after.activeKeyId, result.keyId);
  t.is(after.keys[1]!.id, result.keyId);
  t.not(after.activeKeyId, before.activeKeyId);
  t.not(after.keys[1]!.key, before.keys[0]!.key);
  for (const [i, name] of names.entries()) {
    const entry = readJson<EntryJson>(join(dir, `${sha256(name)}.json`));
    t.is(entry.keyId, after.activeKeyId);
    t.not(entry.nonce, entriesBefore[i]!.nonce);
    t.deepEqual(decryptFile(dir, name), plainBefore[i]);
    // Not decryptable with the old key any more: really re-encrypted.
    t.throws(() =>
      decryptEntry({ activeKeyId: before.activeKeyId, keys: before.keys.map((k) => ({ ...k, id: after.activeKeyId })) }, entry),
    );
  }
  // An entry written under the old key (a copy kept from before) still decrypts: old keys stay usable.
  t.deepEqual(decryptEntry(after, entriesBefore[0]!), plainBefore[0]);

  await store.set("later", "v");
  t.is(readJson<EntryJson>(join(dir, `${sha256("later")}.json`)).keyId, after.activeKeyId);
  const third = await store.rotate();
  t.is(third.reencrypted, 4);
  t.deepEqual(
    readJson<KeyringJson>(join(dir, "keyring.json")).keys.map((k) => k.id),
    [before.activeKeyId, result.keyId, third.keyId],
  );
  t.deepEqual(await store.list(), [...names, "later"].sort());
});

test("rotate on an empty store creates the keyring with its first key", async (t) => {
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir });
  const result = await store.rotate();
  t.is(result.reencrypted, 0);
  const keyring = readJson<KeyringJson>(join(dataDir, "credentials", "keyring.json"));
  t.deepEqual(
    keyring.keys.map((k) => k.id),
    [result.keyId],
  );
});

test("remove deletes the entry file and says whether there was one", async (t) => {
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir });
  await store.set("a", "1");
  t.true(await store.remove("a"));
  t.false(existsSync(join(dataDir, "credentials", `${sha256("a")}.json`)));
  t.false(await store.remove("a"));
  t.is(await store.get("a"), undefined);
  t.deepEqual(await store.list(), []);
});

test("writes are atomic: concurrent readers only ever see a whole file, and no temp file is left", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const store = new CredentialStore({ dataDir });
  const values = ["a".repeat(900_000), "b".repeat(700_000), "c".repeat(1_000_000)];
  await store.set("big", values[0]!);
  const path = join(dir, `${sha256("big")}.json`);
  let writing = true;
  let reads = 0;
  const reader = async () => {
    while (writing) {
      const text = await readFile(path, "utf8");
      const keyring = readJson<KeyringJson>(join(dir, "keyring.json"));
      const value = decryptEntry(keyring, JSON.parse(text)).value; // throws on a partial file
      if (!values.includes(value)) throw new Error("a value that was never written");
      reads++;
    }
  };
  const readers = [reader(), reader(), reader(), reader()];
  for (let i = 0; i < 12; i++) await store.set("big", values[i % values.length]!);
  writing = false;
  await Promise.all(readers);
  t.true(reads > 0);
  t.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith(".")),
    [],
  );
});

test("a writer killed mid-write leaves the old entry or the new one, whole; readers ignore its temp file and lock, the next writer clears them", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const storeModule = new URL("./index.ts", import.meta.url).pathname;
  const old = "old".repeat(100_000);
  await new CredentialStore({ dataDir }).set("victim", old);
  const script = `
    import { CredentialStore } from ${JSON.stringify(storeModule)};
    const store = new CredentialStore({ dataDir: ${JSON.stringify(dataDir)} });
    for (let i = 0; ; i++) await store.set("victim", String(i % 10).repeat(1_000_000));
  `;
  // The kill may still land after the rename (the child is faster than the watch): a few rounds
  // always, more until one has left a temp file behind.
  let leftovers = 0;
  for (let round = 0; round < 3 || (leftovers === 0 && round < 16); round++) {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: "ignore" });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    // Killed the moment its temp file appears (after a few whole writes from the second round on).
    let seen = 0;
    const watcher = watch(dir, (_event, file) => {
      if (file?.startsWith(".tmp-") && ++seen > (round % 3) * 3) child.kill("SIGKILL");
    });
    await exited;
    watcher.close();
    leftovers += readdirSync(dir).filter((f) => f.startsWith(".tmp-")).length;
    const value = decryptFile(dir, "victim").value;
    t.true(value === old || /^(\d)\1{999999}$/.test(value), `round ${round}: a whole value`);
    const store = new CredentialStore({ dataDir });
    t.deepEqual(await store.list(), ["victim"]);
    t.is(await store.get("victim"), value);
  }
  t.true(leftovers > 0, "the writers were killed while writing a temp file");
  // The dead writer's lock (on this host) is broken at once, its temp files removed.
  await new CredentialStore({ dataDir, lockTimeoutMs: 2000 }).set("victim", "after");
  t.is(decryptFile(dir, "victim").value, "after");
  t.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith(".")),
    [],
  );
});

test("writers of two stores (two processes) never lose a key or an update, rotations included", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const one = new CredentialStore({ dataDir });
  const two = new CredentialStore({ dataDir });
  const work: Promise<unknown>[] = [];
  for (let i = 0; i < 24; i++) {
    const store = i % 2 ? one : two;
    work.push(store.set(`k${i}`, `v${i}`));
    if (i % 8 === 3) work.push(store.rotate());
  }
  await Promise.all(work);
  const keyring = readJson<KeyringJson>(join(dir, "keyring.json"));
  t.is(keyring.keys.length, 1 + 3, "one key at creation, one per rotation");
  for (let i = 0; i < 24; i++) t.is(decryptFile(dir, `k${i}`).value, `v${i}`);
  t.false(existsSync(join(dir, ".lock")));
});

test("a lock held by a live writer makes another wait, then give up with a clear error; a stale or dead one is broken", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const store = new CredentialStore({ dataDir, lockTimeoutMs: 300, lockStaleMs: 60_000 });
  await store.list();
  writeFileSync(join(dir, ".lock"), "4242@elsewhere token\n");
  const error = await t.throwsAsync(store.set("a", "1"), { instanceOf: LocalStoreError });
  t.regex(error.message, /busy: another process holds .*\.lock/);
  t.false(existsSync(join(dir, `${sha256("a")}.json`)));

  utimesSync(join(dir, ".lock"), new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
  await store.set("a", "1");
  t.is(await store.get("a"), "1");
  t.false(existsSync(join(dir, ".lock")));

  // Left by a process of this host that is gone: broken at once, however fresh.
  const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  writeFileSync(join(dir, ".lock"), `${dead.stdout}@${hostname()} token\n`);
  await store.set("b", "2");
  t.is(await store.get("b"), "2");
  // Held by a live process of this host: waited for.
  writeFileSync(join(dir, ".lock"), `${process.ppid}@${hostname()} token\n`);
  await t.throwsAsync(store.set("c", "3"), { message: /busy/ });
});

test("damaged files fail with a message naming the file's hash, never a name or a value", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const store = new CredentialStore({ dataDir });
  await store.set("provider.openai", "sk-secret-value");
  const path = join(dir, `${sha256("provider.openai")}.json`);
  const entry = readJson<EntryJson>(path);
  const flipped = Buffer.from(entry.ciphertext, "base64");
  flipped[0]! ^= 1;
  writeFileSync(path, JSON.stringify({ ...entry, ciphertext: flipped.toString("base64") }));
  const error = await t.throwsAsync(store.get("provider.openai"), { instanceOf: LocalStoreError });
  t.is(
    error.message,
    `credential file ${sha256("provider.openai")}.json cannot be decrypted: authentication failed (the file or the key was altered)`,
  );
  await t.throwsAsync(store.list(), { instanceOf: LocalStoreError });

  writeFileSync(path, JSON.stringify({ ...entry, keyId: "nope" }));
  await t.throwsAsync(store.get("provider.openai"), { message: /its key id is not in keyring\.json/ });
  writeFileSync(path, JSON.stringify({ ...entry, version: 2 }));
  await t.throwsAsync(store.get("provider.openai"), { message: /version 2 is not 1/ });
  writeFileSync(join(dir, "keyring.json"), '{"activeKeyId":"x","keys":[{"id":"x","key":"c2hvcnQ=","createdAt":"2024-01-01T00:00:00Z"}]}');
  await t.throwsAsync(store.set("other", "v"), { message: /keyring\.json is damaged: key 0 is not the base64 of 32 bytes/ });
  // A file that decrypts but sits under another name's hash is refused too.
  rmSync(dir, { recursive: true });
  await store.set("a", "1");
  await store.set("b", "2");
  writeFileSync(join(dir, `${sha256("b")}.json`), readFileSync(join(dir, `${sha256("a")}.json`)));
  await t.throwsAsync(store.get("b"), { message: /holds another name than its file name says/ });
});

test("the mounted directory is read-only and read last: a file per name, one trailing newline dropped", async (t) => {
  const dataDir = tempDir(t);
  const mount = tempDir(t, "meshwork-mount-");
  writeFileSync(join(mount, "provider.openai"), "sk-mounted\n");
  writeFileSync(join(mount, "crlf"), "value\r\n");
  writeFileSync(join(mount, "two-newlines"), "value\n\n");
  writeFileSync(join(mount, "bare"), "no newline");
  writeFileSync(join(mount, "shadowed"), "from the mount");
  // Kubernetes' layout: the files are links into a timestamped folder through `..data`.
  mkdirSync(join(mount, "..2024_01_01_00_00_00.1"));
  writeFileSync(join(mount, "..2024_01_01_00_00_00.1", "k8s.key"), "from k8s\n");
  symlinkSync("..2024_01_01_00_00_00.1", join(mount, "..data"));
  symlinkSync(join("..data", "k8s.key"), join(mount, "k8s.key"));
  mkdirSync(join(mount, "folder"));

  const store = new CredentialStore({ dataDir, mountPath: mount });
  t.deepEqual(store.backends, ["local", "mounted"]);
  await store.set("shadowed", "from the files");
  t.deepEqual(await store.lookup("provider.openai"), { value: "sk-mounted", backend: "mounted" });
  t.is(await store.get("crlf"), "value");
  t.is(await store.get("two-newlines"), "value\n");
  t.is(await store.get("bare"), "no newline");
  t.is(await store.get("k8s.key"), "from k8s");
  t.deepEqual(await store.lookup("shadowed"), { value: "from the files", backend: "local" });
  t.is(await store.get("folder"), undefined);
  t.is(await store.get("absent"), undefined);
  t.deepEqual(await store.list(), ["bare", "crlf", "k8s.key", "provider.openai", "shadowed", "two-newlines"]);

  // Read-only: remove only touches the writable backends.
  t.false(await store.remove("provider.openai"));
  t.is(readFileSync(join(mount, "provider.openai"), "utf8"), "sk-mounted\n");
  const lines = auditLines(store).filter((l) => l.operation === "remove");
  t.deepEqual(
    lines.map((l) => l.backend),
    ["local"],
  );
});

test("a mounted directory that does not exist: a miss becomes an error, list fails, a hit elsewhere still answers", async (t) => {
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir, mountPath: join(dataDir, "nowhere") });
  await store.set("here", "v");
  t.is(await store.get("here"), "v");
  const error = await t.throwsAsync(store.get("absent"), { instanceOf: MountedCredentialsError });
  t.regex(error.message, /mounted credentials directory .*nowhere \(APP_CREDENTIALS_MOUNT_PATH\) does not exist/);
  await t.throwsAsync(store.list(), { instanceOf: MountedCredentialsError });
});

test("access.audit.log: one line per backend consulted, in the documented shape, never a name or a value", async (t) => {
  const dataDir = tempDir(t);
  const mount = tempDir(t, "meshwork-mount-");
  writeFileSync(join(mount, "mounted.only"), "mounted-secret-value\n");
  let clock = Date.parse("2030-01-02T03:04:05.000Z");
  const store = new CredentialStore({ dataDir, mountPath: mount, now: () => new Date((clock += 1000)) });

  await store.set("provider.openai", "sk-audit-secret");
  await store.get("provider.openai");
  await store.get("mounted.only");
  await store.get("nowhere.at.all");
  await store.list();
  await store.remove("provider.openai");
  await store.rotate();
  await t.throwsAsync(store.set("bad name", "x"));

  const lines = auditLines(store);
  for (const line of lines) t.deepEqual(Object.keys(line), ["timestamp", "operation", "keyHash", "backend", "success"]);
  const h = (n: string) => sha256(n);
  t.deepEqual(
    lines.map((l) => [l.operation, l.keyHash, l.backend, l.success]),
    [
      ["set", h("provider.openai"), "local", true],
      ["get", h("provider.openai"), "local", true],
      ["get", h("mounted.only"), "local", false],
      ["get", h("mounted.only"), "mounted", true],
      ["get", h("nowhere.at.all"), "local", false],
      ["get", h("nowhere.at.all"), "mounted", false],
      ["list", null, "local", true],
      ["list", null, "mounted", true],
      ["remove", h("provider.openai"), "local", true],
      ["rotate", null, "local", true],
    ],
  );
  // The store's clock, as ISO 8601 UTC, taken when each backend answered.
  t.true(lines.every((l) => /^2030-01-02T03:\d\d:\d\d\.000Z$/.test(l.timestamp as string)));
  t.true(lines.every((l, i) => i === 0 || Date.parse(l.timestamp as string) > Date.parse(lines[i - 1]!.timestamp as string)));

  const all = everything(dataDir);
  for (const secret of ["provider.openai", "mounted.only", "nowhere.at.all", "sk-audit-secret", "mounted-secret-value"]) {
    t.false(all.includes(secret), `${secret} appears under the data directory`);
  }
});

test("a failed local operation is audited with success false", async (t) => {
  const dataDir = tempDir(t);
  const dir = join(dataDir, "credentials");
  const store = new CredentialStore({ dataDir });
  await store.set("a", "1");
  writeFileSync(join(dir, "keyring.json"), "not json at all");
  await t.throwsAsync(store.get("a"), { message: "keyring.json is damaged: it is not JSON" });
  await t.throwsAsync(store.rotate());
  const lines = auditLines(store);
  t.deepEqual(
    lines.slice(-2).map((l) => [l.operation, l.backend, l.success]),
    [
      ["get", "local", false],
      ["rotate", "local", false],
    ],
  );
});
