// The `credentials` command in-process (the same function `meshwork credentials` runs; the child
// process tests are test/e2e/credentials-cli.test.ts): where AgentGateway:DataDir comes from,
// every usage error, stdin's edge cases.
import test from "ava";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { z } from "zod";
import { modules } from "../../registry.js";
import { setting } from "../../runtime/config/index.js";
import type { ServiceModule } from "../../runtime/module/index.js";
import { CredentialStore, expandDataDir, loadDataDir, runCredentialsCommand } from "./index.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

function base(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-credcmd-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function run(
  args: string[],
  options: { env?: Record<string, string>; cwd: string; stdin?: string | Buffer; modules?: readonly ServiceModule[] },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d) => (out += d));
  stderr.on("data", (d) => (err += d));
  const code = await runCredentialsCommand(args, options.modules ?? modules, {
    stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    stdout,
    stderr,
    env: options.env ?? { HOME: options.cwd },
    cwd: options.cwd,
  });
  return { code, stdout: out, stderr: err };
}

test("AgentGateway:DataDir: default ~/.app, appsettings.json, appsettings.{Environment}.json, Section__Key, flags; relative to the working directory", (t) => {
  const dir = base(t);
  const home = join(dir, "home");
  const load = (flags: string[], env: Record<string, string> = {}) =>
    loadDataDir({ flags, env: { HOME: home, ...env }, cwd: dir }, modules);
  t.is(load([]), join(home, ".app"));
  writeFileSync(join(dir, "appsettings.json"), JSON.stringify({ AgentGateway: { DataDir: "from-file" } }));
  t.is(load([]), join(dir, "from-file"));
  writeFileSync(join(dir, "appsettings.Development.json"), JSON.stringify({ AgentGateway: { DataDir: "/abs/dev" } }));
  t.is(load(["--environment", "Development"]), "/abs/dev");
  t.is(load([], { MESHWORK_ENVIRONMENT: "Development" }), "/abs/dev");
  t.is(load([], { AgentGateway__DataDir: "~/custom" }), join(home, "custom"));
  t.is(load([], { agentgateway__datadir: "/lower/case" }), "/lower/case");
  t.is(load(["--AgentGateway:DataDir=/from/flag"], { AgentGateway__DataDir: "/from/env" }), "/from/flag");
  t.is(load(["--agentgateway:datadir", "rel"]), join(dir, "rel"));
  t.is(expandDataDir("~", "/cwd", { HOME: "/h" }), "/h");
  t.is(expandDataDir("~/.app", "/cwd", { HOME: "/h" }), "/h/.app");
  t.is(expandDataDir("x/y", "/cwd", { HOME: "/h" }), "/cwd/x/y");
});

test("the other modules' settings are known (and checked) as when the mesh starts", (t) => {
  const dir = base(t);
  writeFileSync(
    join(dir, "appsettings.json"),
    JSON.stringify({ Gateway: { Server: { Port: 18790 } }, Fronts: { Tracking: { Port: 8081 } } }),
  );
  t.is(loadDataDir({ flags: [], env: { HOME: dir }, cwd: dir }, modules), join(dir, ".app"));
  writeFileSync(join(dir, "appsettings.json"), JSON.stringify({ Gateway: { Server: { Port: "nope" } } }));
  t.throws(() => loadDataDir({ flags: [], env: { HOME: dir }, cwd: dir }, modules), { message: /Invalid setting Gateway:Server:Port/ });
});

test("once a module declares AgentGateway:DataDir, its declaration is the one read", (t) => {
  const dir = base(t);
  const declaring = {
    name: "declaring",
    settings: z.object({
      agentGateway: z.object({ dataDir: setting.string({ default: "/declared/default", description: "test" }) }),
    }),
  } as unknown as ServiceModule;
  // The agents module declares it itself now: the stand-in takes its place.
  const others = modules.filter((m) => m.name !== "agents");
  t.is(loadDataDir({ flags: [], env: {}, cwd: dir }, [...others, declaring]), "/declared/default");
  t.is(loadDataDir({ flags: ["--AgentGateway:DataDir=/x"], env: {}, cwd: dir }, [...others, declaring]), "/x");
});

test("usage and configuration errors: exit 2, one line, nothing done", async (t) => {
  const dir = base(t);
  const cases: [string[], Record<string, string>, RegExp][] = [
    [[], {}, /^meshwork credentials: a command is needed: set, list, remove or rotate; see `meshwork credentials --help`\n$/],
    [["get", "x"], {}, /unknown command 'get'/],
    [["set"], {}, /'set' takes one credential name/],
    [["remove", "a", "b"], {}, /'remove' takes one credential name/],
    [["rotate", "x"], {}, /'rotate' takes no argument/],
    [["set", ".hidden"], {}, /invalid credential name/],
    [["set", "a/b"], {}, /invalid credential name/],
    [["list", "--Nope:Key=1"], {}, /Unknown setting Nope:Key \(from flag --Nope:Key\)/],
    [["list", "--AgentGateway:DataDir"], {}, /Flag --AgentGateway:DataDir needs a value/],
    [["list", "stray", "--x=1"], {}, /'list' takes no argument/],
    [
      ["list"],
      { APP_VAULT_ADDR: "ftp://vault", APP_VAULT_TOKEN: "hvs.tok-123" },
      /APP_VAULT_ADDR: expected an http:\/\/ or https:\/\/ URL/,
    ],
    [["list"], { APP_VAULT_ADDR: "http://vault:8200" }, /APP_VAULT_TOKEN is not/],
  ];
  for (const [args, env, message] of cases) {
    const out = await run([...args, ...(args.some((a) => a.startsWith("--")) ? [] : [`--AgentGateway:DataDir=${dir}/d`])], {
      cwd: dir,
      env: { HOME: dir, ...env },
    });
    t.is(out.code, 2, args.join(" "));
    t.is(out.stdout, "");
    t.regex(out.stderr, /^meshwork credentials: [^\n]+\n$/);
    t.regex(out.stderr, message);
    t.false(out.stderr.includes("hvs.tok-123"));
  }
  t.false(existsSync(join(dir, "d")), "nothing was created");
  const help = await run(["rotate", "--help"], { cwd: dir });
  t.is(help.code, 0);
  t.regex(help.stdout, /^Usage: meshwork credentials <command>/);
});

test("stdin: one trailing newline dropped, CRLF too; empty, non-UTF-8 and oversized values fail with exit 1", async (t) => {
  const dir = base(t);
  const flag = `--AgentGateway:DataDir=${dir}`;
  const store = new CredentialStore({ dataDir: dir });
  for (const [input, value] of [
    ["plain\n", "plain"],
    ["crlf\r\n", "crlf"],
    ["two\n\n", "two\n"],
    ["none", "none"],
    [" spaces kept \n", " spaces kept "],
  ] as const) {
    const out = await run(["set", "k", flag], { cwd: dir, stdin: input });
    t.deepEqual(out, { code: 0, stdout: "", stderr: "" });
    t.is(await store.get("k"), value);
  }
  const fails: [string | Buffer, RegExp][] = [
    ["", /no value on stdin/],
    ["\n", /no value on stdin/],
    [Buffer.from([0x66, 0xff, 0xfe, 0x0a]), /not UTF-8 text/],
    ["x".repeat(1024 * 1024 + 3), /larger than 1048576 bytes/],
  ];
  for (const [input, message] of fails) {
    const out = await run(["set", "k", flag], { cwd: dir, stdin: input });
    t.is(out.code, 1);
    t.regex(out.stderr, /^meshwork credentials: [^\n]+\n$/);
    t.regex(out.stderr, message);
  }
  // A value of exactly 1 MiB with its newline is fine.
  t.is((await run(["set", "k", flag], { cwd: dir, stdin: `${"y".repeat(1024 * 1024)}\n` })).code, 0);
  t.is((await store.get("k"))?.length, 1024 * 1024);
});

test("remove of a mounted-only name fails (read-only); list shows every backend", async (t) => {
  const dir = base(t);
  const mount = join(dir, "mount");
  mkdirSync(mount);
  writeFileSync(join(mount, "mounted.key"), "m\n");
  const env = { HOME: dir, APP_CREDENTIALS_MOUNT_PATH: "mount" }; // relative to the working directory
  const flag = `--AgentGateway:DataDir=${dir}/data`;
  t.is((await run(["set", "local.key", flag], { cwd: dir, env, stdin: "v" })).code, 0);
  t.deepEqual(await run(["list", flag], { cwd: dir, env }), { code: 0, stdout: "local.key\nmounted.key\n", stderr: "" });
  const out = await run(["remove", "mounted.key", flag], { cwd: dir, env });
  t.deepEqual(out, {
    code: 1,
    stdout: "",
    stderr: "meshwork credentials: no stored credential by that name (the mounted directory is read-only)\n",
  });
  t.true(existsSync(join(dir, "data", "credentials", `${sha256("local.key")}.json`)));
});
