// `meshwork credentials ...` as a user runs it: a child process (`node bin/meshwork.js`, and once
// `npm start --`), the value on stdin, exit codes 0/1/2, one line on stderr, the data directory
// from a flag, the environment or ~/.app, Vault from APP_VAULT_*; no database, no mesh. Files are
// decrypted here with node:crypto, and no value ever shows in any output. Every start of the
// command costs seconds (as `meshwork --help` does), so the matrix of settings sources, usage errors
// and stdin edge cases runs in-process in services/agents/credentials/command.test.ts.
import test from "ava";
import { spawn } from "node:child_process";
import { createDecipheriv, createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeVault } from "../support/fake-vault.js";

const root = process.cwd();
const bin = join(root, "bin/meshwork.js");
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without anything that would pick a store or a backend for the child. */
function cleanEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(APP_|AGENTGATEWAY__|MESHWORK_)/i.test(k)) continue;
    env[k] = v;
  }
  // A database and a bus that cannot be reached: the command must not need either.
  return { ...env, HOME: home, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", NATS_URL: "nats://127.0.0.1:1", ...extra };
}

function run(command: string, args: string[], options: { env: Record<string, string>; input?: string; cwd?: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd ?? root, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

const meshwork = (args: string[], options: { env: Record<string, string>; input?: string; cwd?: string }) =>
  run(process.execPath, [bin, "credentials", ...args], options);

function setup(t: { teardown(fn: () => void): void }) {
  const base = mkdtempSync(join(tmpdir(), "meshwork-credcli-"));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const home = join(base, "home");
  mkdirSync(home);
  const dataDir = join(base, "data");
  return { base, home, dataDir, env: cleanEnv(home), flag: `--AgentGateway:DataDir=${dataDir}` };
}

function decrypt(dataDir: string, name: string): { name: string; value: string; updatedAt: string } {
  const dir = join(dataDir, "credentials");
  const keyring = JSON.parse(readFileSync(join(dir, "keyring.json"), "utf8"));
  const entry = JSON.parse(readFileSync(join(dir, `${sha256(name)}.json`), "utf8"));
  const key = keyring.keys.find((k: { id: string }) => k.id === entry.keyId);
  const decipher = createDecipheriv("aes-256-gcm", Buffer.from(key.key, "base64"), Buffer.from(entry.nonce, "base64"));
  decipher.setAuthTag(Buffer.from(entry.tag, "base64"));
  return JSON.parse(Buffer.concat([decipher.update(Buffer.from(entry.ciphertext, "base64")), decipher.final()]).toString("utf8"));
}

/** One line on stderr starting with the command's name. */
function oneLine(t: { is(a: unknown, b: unknown, m?: string): void; regex(a: string, r: RegExp): void }, out: Run): void {
  t.regex(out.stderr, /^meshwork credentials: [^\n]+\n$/);
}

test("set (stdin, one trailing newline dropped), list, rotate, remove: exit codes, files decrypted with node:crypto, modes", async (t) => {
  const { env, flag, dataDir } = setup(t);
  const set = await meshwork(["set", "provider.openai", flag], { env, input: "sk-cli-secret-1\n" });
  t.deepEqual(set, { code: 0, stdout: "", stderr: "" });
  t.deepEqual(Object.keys(decrypt(dataDir, "provider.openai")), ["name", "value", "updatedAt"]);
  t.is(decrypt(dataDir, "provider.openai").value, "sk-cli-secret-1");
  t.is(decrypt(dataDir, "provider.openai").name, "provider.openai");
  // Only one newline goes.
  t.is((await meshwork(["set", "multi", flag], { env, input: "line1\nline2\n\n" })).code, 0);
  t.is(decrypt(dataDir, "multi").value, "line1\nline2\n");

  t.deepEqual(await meshwork(["list", flag], { env }), { code: 0, stdout: "multi\nprovider.openai\n", stderr: "" });

  const dir = join(dataDir, "credentials");
  const keyringBefore = JSON.parse(readFileSync(join(dir, "keyring.json"), "utf8"));
  const rotate = await meshwork(["rotate", flag], { env });
  t.is(rotate.code, 0);
  t.is(rotate.stderr, "");
  const keyring = JSON.parse(readFileSync(join(dir, "keyring.json"), "utf8"));
  t.is(rotate.stdout, `active key ${keyring.activeKeyId}; 2 entries re-encrypted\n`);
  t.is(keyring.keys.length, 2);
  t.deepEqual(keyring.keys[0], keyringBefore.keys[0]);
  t.is(JSON.parse(readFileSync(join(dir, `${sha256("multi")}.json`), "utf8")).keyId, keyring.activeKeyId);
  t.is(decrypt(dataDir, "provider.openai").value, "sk-cli-secret-1");

  t.deepEqual(await meshwork(["remove", "multi", flag], { env }), { code: 0, stdout: "", stderr: "" });
  t.false(existsSync(join(dir, `${sha256("multi")}.json`)));
  const again = await meshwork(["remove", "multi", flag], { env });
  t.is(again.code, 1);
  oneLine(t, again);
  t.regex(again.stderr, /no stored credential by that name/);

  t.is(statSync(dir).mode & 0o777, 0o700);
  for (const file of readdirSync(dir)) t.is(statSync(join(dir, file)).mode & 0o777, 0o600, file);
  const log = readFileSync(join(dir, "access.audit.log"), "utf8");
  t.deepEqual(
    log
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).operation),
    ["set", "set", "list", "rotate", "remove", "remove"],
  );
  for (const text of ["provider.openai", "multi", "sk-cli-secret-1", "line1"]) t.false(log.includes(text));
});

test("usage errors exit 2 and failures exit 1, each with one line on stderr and no value in any output", async (t) => {
  const { env, flag, dataDir } = setup(t);
  const [unknown, badName, help, empty] = await Promise.all([
    meshwork(["frobnicate", flag], { env }),
    meshwork(["set", "../escape", flag], { env, input: "sk-not-stored\n" }),
    meshwork(["--help"], { env }),
    meshwork(["set", "k", flag], { env, input: "" }),
  ]);
  t.is(unknown.code, 2);
  oneLine(t, unknown);
  t.regex(unknown.stderr, /unknown command 'frobnicate'/);
  t.is(badName.code, 2);
  oneLine(t, badName);
  t.regex(badName.stderr, /invalid credential name/);
  t.is(help.code, 0);
  t.regex(help.stdout, /set <name> +store a credential; the value is read from stdin/);
  t.is(empty.code, 1);
  oneLine(t, empty);
  t.regex(empty.stderr, /no value on stdin/);

  t.is((await meshwork(["set", "k", flag], { env, input: "sk-never-printed-123\n" })).code, 0);
  writeFileSync(join(dataDir, "credentials", "keyring.json"), "{ damaged");
  const damaged = await meshwork(["set", "other", flag], { env, input: "sk-other-never-printed\n" });
  t.deepEqual(damaged, { code: 1, stdout: "", stderr: "meshwork credentials: keyring.json is damaged: it is not JSON\n" });
  for (const out of [unknown, badName, help, empty, damaged]) t.false(`${out.stdout}${out.stderr}`.includes("sk-"));
});

test("the data directory from AgentGateway__DataDir, else ~/.app", async (t) => {
  const { base, home, env } = setup(t);
  const fromEnv = join(base, "from-env");
  const [viaEnv, viaHome] = await Promise.all([
    meshwork(["set", "k"], { env: { ...env, AgentGateway__DataDir: fromEnv }, input: "v1" }),
    meshwork(["set", "k"], { env, input: "v2" }),
  ]);
  t.is(viaEnv.code, 0);
  t.is(decrypt(fromEnv, "k").value, "v1");
  t.is(viaHome.code, 0);
  t.is(decrypt(join(home, ".app"), "k").value, "v2");
  t.is(statSync(join(home, ".app", "credentials")).mode & 0o777, 0o700);
});

test("with APP_VAULT_*, the command writes Vault KV v2 first; Vault down fails with a line naming Vault, never the token", async (t) => {
  const { env, flag, dataDir } = setup(t);
  const vault = await startFakeVault();
  t.teardown(() => vault.close());
  const vaultEnv = { ...env, APP_VAULT_ADDR: vault.url, APP_VAULT_TOKEN: vault.token, APP_VAULT_PREFIX: "gateway" };
  const set = await meshwork(["set", "provider.openai", flag], { env: vaultEnv, input: "sk-from-cli\n" });
  t.deepEqual(set, { code: 0, stdout: "", stderr: "" });
  t.deepEqual(vault.read("gateway/provider.openai"), { value: "sk-from-cli" });
  t.deepEqual(
    vault.requests.map((r) => [r.method, r.path, r.token === vault.token]),
    [["POST", "/v1/secret/data/gateway/provider.openai", true]],
  );
  t.is(decrypt(dataDir, "provider.openai").value, "sk-from-cli");
  vault.write("gateway/vault.only", { value: "x" });
  t.deepEqual(await meshwork(["list", flag], { env: vaultEnv }), { code: 0, stdout: "provider.openai\nvault.only\n", stderr: "" });
  t.deepEqual(vault.requests.at(-1)!.path, "/v1/secret/metadata/gateway/");

  await vault.close();
  const down = await meshwork(["set", "provider.openai", flag], { env: vaultEnv, input: "sk-while-down\n" });
  t.deepEqual(down, {
    code: 1,
    stdout: "",
    stderr: `meshwork credentials: Vault at ${vault.url} is unreachable (ECONNREFUSED) while writing a credential\n`,
  });
  t.is(decrypt(dataDir, "provider.openai").value, "sk-from-cli", "the files were not touched");
  t.false(down.stderr.includes(vault.token));
});

test("no database, no bus, no mesh: unreachable DATABASE_URL and NATS_URL, no embedded PostgreSQL started", async (t) => {
  const { env, flag, base } = setup(t);
  const meshData = join(base, "mesh-data");
  const out = await meshwork(["list", flag, `--Data:Dir=${meshData}`], { env });
  t.deepEqual(out, { code: 0, stdout: "", stderr: "" });
  t.false(existsSync(meshData), "the embedded database's directory was never made");
});

test("npm start -- credentials ... runs the same command", async (t) => {
  const { env, flag, dataDir } = setup(t);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const set = await run(npm, ["start", "--silent", "--", "credentials", "set", "via.npm", flag], { env, input: "sk-npm\n" });
  t.is(set.code, 0, set.stderr);
  t.is(decrypt(dataDir, "via.npm").value, "sk-npm");
  const list = await run(npm, ["start", "--silent", "--", "credentials", "list", flag], { env });
  t.is(list.code, 0);
  t.is(list.stdout, "via.npm\n");
});
