// The credential store with Vault KV v2 in front, against a loopback Vault speaking the real HTTP
// API (test/support/fake-vault.ts): paths, token, LIST, write-through to the files, and what
// happens when Vault is down, sealed, slow, refuses the token or has no engine at the mount.
import test from "ava";
import { createDecipheriv, createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeVault, startFakeVault } from "../../../test/support/fake-vault.js";
import { ConfigError } from "../../runtime/config/index.js";
import { CredentialStore, type CredentialStoreOptions, credentialBackendsFromEnv, VaultError } from "./index.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-vault-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function vaultFor(t: { teardown(fn: () => Promise<void>): void }, options: { mount?: string } = {}): Promise<FakeVault> {
  const vault = await startFakeVault(options);
  t.teardown(() => vault.close());
  return vault;
}

function storeWith(
  dataDir: string,
  vault: { url: string; token: string },
  extra: Partial<CredentialStoreOptions> = {},
  prefix = "meshwork",
) {
  return new CredentialStore({
    dataDir,
    vault: { addr: vault.url, token: vault.token, mount: "secret", prefix, timeoutMs: 2000 },
    ...extra,
  });
}

function audit(store: CredentialStore): { operation: string; keyHash: string | null; backend: string; success: boolean }[] {
  if (!existsSync(store.auditLogPath)) return [];
  return readFileSync(store.auditLogPath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

function localValue(dataDir: string, name: string): string | undefined {
  const dir = join(dataDir, "credentials");
  const path = join(dir, `${sha256(name)}.json`);
  if (!existsSync(path)) return undefined;
  const keyring = JSON.parse(readFileSync(join(dir, "keyring.json"), "utf8"));
  const entry = JSON.parse(readFileSync(path, "utf8"));
  const key = keyring.keys.find((k: { id: string }) => k.id === entry.keyId);
  const decipher = createDecipheriv("aes-256-gcm", Buffer.from(key.key, "base64"), Buffer.from(entry.nonce, "base64"));
  decipher.setAuthTag(Buffer.from(entry.tag, "base64"));
  return JSON.parse(Buffer.concat([decipher.update(Buffer.from(entry.ciphertext, "base64")), decipher.final()]).toString()).value;
}

/** A loopback port with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("set writes the KV v2 data path with the token, then the local files; get reads Vault first", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const store = storeWith(dataDir, vault);
  t.deepEqual(store.backends, ["vault", "local"]);

  await store.set("provider.openai", "sk-vault-1");
  const write = vault.requests.at(-1)!;
  t.is(write.method, "POST");
  t.is(write.path, "/v1/secret/data/meshwork/provider.openai");
  t.is(write.token, vault.token);
  t.is(write.headers["content-type"], "application/json");
  t.deepEqual(JSON.parse(write.body), { data: { value: "sk-vault-1" } });
  t.deepEqual(vault.read("meshwork/provider.openai"), { value: "sk-vault-1" });
  t.is(localValue(dataDir, "provider.openai"), "sk-vault-1", "written through to the files");

  // Vault is the source of truth: a value changed there wins over the local copy.
  vault.write("meshwork/provider.openai", { value: "sk-rotated-in-vault", other: "ignored" });
  const before = vault.requests.length;
  t.deepEqual(await store.lookup("provider.openai"), { value: "sk-rotated-in-vault", backend: "vault" });
  t.deepEqual(
    vault.requests.slice(before).map((r) => [r.method, r.path, r.token === vault.token]),
    [["GET", "/v1/secret/data/meshwork/provider.openai", true]],
  );
  t.deepEqual(
    audit(store).map((l) => [l.operation, l.backend, l.success]),
    [
      ["set", "vault", true],
      ["set", "local", true],
      ["get", "vault", true],
    ],
  );
});

test("a name Vault does not have (404) is looked for in the files, then the mounted directory", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const mount = tempDir(t);
  writeFileSync(join(mount, "mounted.key"), "from-mount\n");
  const local = new CredentialStore({ dataDir });
  await local.set("local.only", "from-files"); // written before Vault was configured
  const store = storeWith(dataDir, vault, { mountPath: mount });
  t.deepEqual(store.backends, ["vault", "local", "mounted"]);
  t.deepEqual(await store.lookup("local.only"), { value: "from-files", backend: "local" });
  t.deepEqual(await store.lookup("mounted.key"), { value: "from-mount", backend: "mounted" });
  t.is(await store.get("nowhere"), undefined);
  t.deepEqual(
    audit(store)
      .slice(1) // the set made before Vault was configured
      .map((l) => [l.keyHash, l.backend, l.success]),
    [
      [sha256("local.only"), "vault", false],
      [sha256("local.only"), "local", true],
      [sha256("mounted.key"), "vault", false],
      [sha256("mounted.key"), "local", false],
      [sha256("mounted.key"), "mounted", true],
      [sha256("nowhere"), "vault", false],
      [sha256("nowhere"), "local", false],
      [sha256("nowhere"), "mounted", false],
    ],
  );
});

test("list goes through the KV v2 metadata LIST endpoint and merges every backend's names", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const mount = tempDir(t);
  writeFileSync(join(mount, "mounted.key"), "m");
  const store = storeWith(dataDir, vault, { mountPath: mount });
  t.deepEqual(await store.list(), ["mounted.key"], "an empty folder is Vault's 404");
  await store.set("b.key", "1");
  vault.write("meshwork/a.vault-only", { value: "2" });
  vault.write("meshwork/team/nested", { value: "3" }); // a sub-folder: not a credential of ours
  vault.write("elsewhere/x", { value: "4" }); // outside the prefix
  await new CredentialStore({ dataDir }).set("c.local-only", "5");

  const before = vault.requests.length;
  t.deepEqual(await store.list(), ["a.vault-only", "b.key", "c.local-only", "mounted.key"]);
  const listed = vault.requests.slice(before);
  t.deepEqual(
    listed.map((r) => [r.method, r.path, r.query, r.token === vault.token]),
    [["GET", "/v1/secret/metadata/meshwork/", "list=true", true]],
  );
  // The same endpoint with the LIST verb, as Vault's own CLI calls it: the fake answers alike.
  const verb = await fetch(`${vault.url}/v1/secret/metadata/meshwork`, { method: "LIST", headers: { "X-Vault-Token": vault.token } });
  t.is(verb.status, 200);
  t.deepEqual(((await verb.json()) as { data: { keys: string[] } }).data.keys, ["a.vault-only", "b.key", "team/"]);
  t.deepEqual(
    audit(store)
      .filter((l) => l.operation === "list")
      .map((l) => [l.keyHash, l.backend, l.success]),
    [
      [null, "vault", true],
      [null, "local", true],
      [null, "mounted", true],
      [null, "vault", true],
      [null, "local", true],
      [null, "mounted", true],
    ],
  );
});

test("remove deletes the secret's metadata (every version) in Vault, then the local entry", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const store = storeWith(dataDir, vault);
  await store.set("provider.openai", "v1");
  await store.set("provider.openai", "v2");
  t.is(vault.secrets.get("meshwork/provider.openai")!.versions.length, 2);
  const before = vault.requests.length;
  t.true(await store.remove("provider.openai"));
  t.deepEqual(
    vault.requests.slice(before).map((r) => [r.method, r.path]),
    [
      ["GET", "/v1/secret/metadata/meshwork/provider.openai"],
      ["DELETE", "/v1/secret/metadata/meshwork/provider.openai"],
    ],
  );
  t.false(vault.secrets.has("meshwork/provider.openai"));
  t.is(localValue(dataDir, "provider.openai"), undefined);
  t.false(await store.remove("provider.openai"));
  // Only in Vault, or only in the files: either counts.
  vault.write("meshwork/vault.only", { value: "x" });
  t.true(await store.remove("vault.only"));
  await new CredentialStore({ dataDir }).set("files.only", "y");
  t.true(await store.remove("files.only"));
});

test("no prefix and another mount: {addr}/v1/{mount}/data/{name}", async (t) => {
  const vault = await vaultFor(t, { mount: "kv" });
  const dataDir = tempDir(t);
  const store = new CredentialStore({ dataDir, vault: { addr: `${vault.url}/`, token: vault.token, mount: "kv" } });
  await store.set("top", "v");
  t.is(vault.requests.at(-1)!.path, "/v1/kv/data/top");
  t.deepEqual(await store.list(), ["top"]);
  t.is(vault.requests.at(-1)!.path, "/v1/kv/metadata/");
  t.is(await store.get("top"), "v");
});

test("Vault down: reads fall back to the files, a miss is an error, writes and lists fail without touching the files", async (t) => {
  const dataDir = tempDir(t);
  const token = "hvs.do-not-print-this-token";
  const port = await closedPort();
  const vaultAddr = `http://127.0.0.1:${port}`;
  const offline = new CredentialStore({ dataDir });
  await offline.set("cached", "local-copy");
  await offline.set("to.remove", "keep-me");
  const store = new CredentialStore({ dataDir, vault: { addr: vaultAddr, token, prefix: "meshwork" } });

  // get: the local copy answers.
  t.deepEqual(await store.lookup("cached"), { value: "local-copy", backend: "local" });
  // get of a name nobody else has: Vault's failure, not "not found" (Vault may well hold it).
  const miss = await t.throwsAsync(store.get("only.in.vault"), { instanceOf: VaultError });
  t.is(miss.message, `Vault at ${vaultAddr} is unreachable (ECONNREFUSED) while reading a credential`);
  t.is(miss.status, undefined);

  const set = await t.throwsAsync(store.set("new.key", "new-value"), { instanceOf: VaultError });
  t.regex(set.message, /^Vault at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED\) while writing a credential$/);
  t.is(localValue(dataDir, "new.key"), undefined, "not written locally: Vault's older value would shadow it later");
  await t.throwsAsync(store.remove("to.remove"), { instanceOf: VaultError, message: /while removing a credential/ });
  t.is(localValue(dataDir, "to.remove"), "keep-me");
  await t.throwsAsync(store.list(), { instanceOf: VaultError, message: /while listing credentials/ });
  // rotate concerns the files only.
  t.is((await store.rotate()).reencrypted, 2);

  for (const error of [miss, set]) t.false(error.message.includes(token));
  t.deepEqual(
    audit(store)
      .slice(2) // the two sets made before Vault was configured
      .map((l) => [l.operation, l.backend, l.success]),
    [
      ["get", "vault", false],
      ["get", "local", true],
      ["get", "vault", false],
      ["get", "local", false],
      ["set", "vault", false],
      ["remove", "vault", false],
      ["list", "vault", false],
      ["rotate", "local", true],
    ],
  );
  const log = readFileSync(store.auditLogPath, "utf8");
  for (const text of [token, "cached", "only.in.vault", "new-value", "local-copy"]) t.false(log.includes(text));
});

test("Vault sealed (503), refusing the token (403), too slow, or with no engine at the mount: each a clear error", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  await new CredentialStore({ dataDir }).set("cached", "local-copy");

  vault.sealed = true;
  const store = storeWith(dataDir, vault);
  const sealed = await t.throwsAsync(store.set("k", "v"), { instanceOf: VaultError });
  t.is(sealed.message, `Vault at ${vault.url} is unavailable (503, sealed) while writing a credential`);
  t.is(sealed.status, 503);
  t.is(await store.get("cached"), "local-copy");
  vault.sealed = false;

  const wrong = new CredentialStore({ dataDir, vault: { addr: vault.url, token: "hvs.wrong-token-value", prefix: "meshwork" } });
  const refused = await t.throwsAsync(wrong.set("k", "v"), { instanceOf: VaultError });
  t.is(refused.message, `Vault at ${vault.url} refused the token (403) while writing a credential; check APP_VAULT_TOKEN and its policy`);
  t.is(vault.requests.at(-1)!.token, "hvs.wrong-token-value");
  t.false(vault.secrets.has("meshwork/k"));
  t.is(await wrong.get("cached"), "local-copy");

  const mountless = new CredentialStore({ dataDir, vault: { addr: vault.url, token: vault.token, mount: "nosuch", prefix: "meshwork" } });
  const noRoute = await t.throwsAsync(mountless.get("absent"), { instanceOf: VaultError });
  t.is(
    noRoute.message,
    `Vault at ${vault.url} has no KV v2 engine answering at mount 'nosuch' (404) while reading a credential; check APP_VAULT_MOUNT`,
  );
  t.is(await mountless.get("cached"), "local-copy", "a wrong mount is a Vault failure, and reads fall back");

  vault.hang = true;
  const slow = new CredentialStore({ dataDir, vault: { addr: vault.url, token: vault.token, prefix: "meshwork", timeoutMs: 300 } });
  const started = Date.now();
  t.is(await slow.get("cached"), "local-copy");
  t.true(Date.now() - started < 2000);
  await t.throwsAsync(slow.list(), {
    instanceOf: VaultError,
    message: `Vault at ${vault.url} did not answer within 300 ms while listing credentials`,
  });
  vault.hang = false;

  for (const error of [sealed, refused, noRoute]) t.false(error.message.includes(vault.token));
});

test("a standby's 307 towards the active node is followed, the token with it", async (t) => {
  const vault = await vaultFor(t);
  const standby = createHttpServer((req, res) => {
    res.writeHead(307, { Location: `${vault.url}${req.url}` });
    res.end();
  });
  await new Promise<void>((resolve) => standby.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => standby.close(() => resolve())));
  const dataDir = tempDir(t);
  const store = storeWith(dataDir, { url: `http://127.0.0.1:${(standby.address() as { port: number }).port}`, token: vault.token });
  await store.set("k", "through-standby");
  t.deepEqual(vault.read("meshwork/k"), { value: "through-standby" });
  t.is(vault.requests.at(-1)!.token, vault.token);
  t.is(await store.get("k"), "through-standby");
});

test("a secret without a string field 'value' is an error, and reads fall back past it", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const store = storeWith(dataDir, vault);
  vault.write("meshwork/odd", { password: "not-value" });
  await t.throwsAsync(store.get("odd"), { instanceOf: VaultError, message: /without a string field 'value'/ });
  await new CredentialStore({ dataDir }).set("odd", "local");
  t.is(await store.get("odd"), "local");
});

test("nothing written under the data directory names a credential or holds a value, Vault or not", async (t) => {
  const vault = await vaultFor(t);
  const dataDir = tempDir(t);
  const store = storeWith(dataDir, vault);
  await store.set("provider.secretname", "sk-very-secret-value");
  await store.get("provider.secretname");
  await store.list();
  await store.rotate();
  await store.remove("provider.secretname");
  let all = "";
  for (const file of readdirSync(join(dataDir, "credentials"))) all += file + readFileSync(join(dataDir, "credentials", file), "utf8");
  for (const text of ["provider.secretname", "sk-very-secret-value", vault.token]) t.false(all.includes(text));
});

test("credentialBackendsFromEnv: APP_VAULT_* and APP_CREDENTIALS_MOUNT_PATH, bad values named without the token", (t) => {
  t.deepEqual(credentialBackendsFromEnv({}), {});
  t.deepEqual(credentialBackendsFromEnv({ APP_VAULT_ADDR: "", APP_CREDENTIALS_MOUNT_PATH: "" }), {});
  t.deepEqual(credentialBackendsFromEnv({ APP_VAULT_ADDR: "https://vault:8200", APP_VAULT_TOKEN: "hvs.t" }), {
    vault: { addr: "https://vault:8200", token: "hvs.t", mount: "secret", prefix: "" },
  });
  t.deepEqual(
    credentialBackendsFromEnv(
      {
        APP_VAULT_ADDR: "http://127.0.0.1:8200",
        APP_VAULT_TOKEN: "hvs.t",
        APP_VAULT_MOUNT: "kv",
        APP_VAULT_PREFIX: "apps/gw",
        APP_CREDENTIALS_MOUNT_PATH: "secrets",
      },
      "/srv",
    ),
    { vault: { addr: "http://127.0.0.1:8200", token: "hvs.t", mount: "kv", prefix: "apps/gw" }, mountPath: "/srv/secrets" },
  );
  const noToken = t.throws(() => credentialBackendsFromEnv({ APP_VAULT_ADDR: "http://vault:8200" }), { instanceOf: ConfigError });
  t.regex(noToken.message, /APP_VAULT_TOKEN is not/);
  t.is(
    credentialBackendsFromEnv({ APP_VAULT_ADDR: "http://vault:8200", APP_VAULT_TOKEN: "hvs.from-a-file\n" }).vault?.token,
    "hvs.from-a-file",
  );
  const spaced = t.throws(() => credentialBackendsFromEnv({ APP_VAULT_ADDR: "http://vault:8200", APP_VAULT_TOKEN: "hvs.two words" }), {
    instanceOf: ConfigError,
  });
  t.false(spaced.message.includes("two words"));
  const direct = t.throws(
    () => new CredentialStore({ dataDir: "/nowhere", vault: { addr: "http://vault:8200", token: "hvs.bad\ntoken" } }),
    {
      instanceOf: VaultError,
    },
  );
  t.false(direct.message.includes("hvs.bad"));
  const badAddr = t.throws(() => credentialBackendsFromEnv({ APP_VAULT_ADDR: "vault:8200", APP_VAULT_TOKEN: "hvs.secret-token" }), {
    instanceOf: ConfigError,
  });
  t.regex(badAddr.message, /APP_VAULT_ADDR/);
  t.false(badAddr.message.includes("hvs.secret-token"));
});
