// The apply flow's steps without a mesh: a control socket that records drain and resume, and an
// `npm` stand-in. A step that fails undoes the drain and names itself in one line; nothing is
// drained when no daemon runs; the token goes to npm in a user config file, never as an argument.
import { chmod, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { applyUpdate, authLine } from "./apply-update.js";
import { serveControlSocket } from "./control-socket.js";

const check = { packageId: "app-daemon", currentVersion: "0.1.0", latestVersion: "0.2.0", updateAvailable: true };

/** An `npm` that records its arguments (and the user config it was given), installs `version` of the package, or fails. */
async function fakeNpm(dir: string, behaviour: { version?: string; fail?: string }) {
  const script = join(dir, "npm");
  await writeFile(
    script,
    `#!${process.execPath}
const fs = require("node:fs");
const path = require("node:path");
const args = process.argv.slice(2);
const userConfig = args.includes("--userconfig") ? fs.readFileSync(args[args.indexOf("--userconfig") + 1], "utf8") : null;
fs.appendFileSync(${JSON.stringify(join(dir, "calls.jsonl"))}, JSON.stringify({ args, userConfig }) + "\\n");
${behaviour.fail ? `process.stderr.write("npm error code E404\\nnpm error ${behaviour.fail}\\nnpm error A complete log of this run can be found in: /x\\n"); process.exit(1);` : ""}
const prefix = args[args.indexOf("--prefix") + 1];
const pkg = path.join(prefix, "lib", "node_modules", "app-daemon");
fs.mkdirSync(pkg, { recursive: true });
fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "app-daemon", version: ${JSON.stringify(behaviour.version ?? "0.2.0")}, bin: { "app-daemon": "bin.js" } }));
fs.writeFileSync(path.join(pkg, "bin.js"), "process.exit(0)");
`,
  );
  await chmod(script, 0o755);
  return {
    npm: script,
    calls: async () =>
      (await readFile(join(dir, "calls.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { args: string[]; userConfig: string | null }),
  };
}

async function daemonSocket(t: import("ava").ExecutionContext, dir: string) {
  const calls: string[] = [];
  const path = join(dir, "daemon.sock");
  const socket = await serveControlSocket(
    path,
    { version: "0.1.0", manager: "process" },
    {
      "POST /drain": (body) => {
        calls.push(`drain ${JSON.stringify(body)}`);
        return { drained: true, inFlight: 0 };
      },
      "POST /resume": () => {
        calls.push("resume");
        return { resumed: true };
      },
    },
  );
  t.teardown(() => socket.close());
  return { path, calls };
}

function options(dir: string, npm: string, socketPath: string, restarts: string[]) {
  return {
    check,
    feed: "http://127.0.0.1:9/feed",
    token: "npm-token-secret-5",
    installPrefix: join(dir, "prefix"),
    socketPath,
    drainTimeoutMs: 1234,
    flags: ["--AgentGateway:DataDir=/x"],
    installed: true,
    restart: async () => {
      restarts.push("restart");
    },
    node: process.execPath,
    platform: process.platform,
    npm,
  };
}

test("every step in order: drain, npm install with the token in a user config, reconcile, restart", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "apply-steps-"));
  const npm = await fakeNpm(dir, {});
  const daemon = await daemonSocket(t, dir);
  const restarts: string[] = [];
  t.is(await applyUpdate(options(dir, npm.npm, daemon.path, restarts)), "0.1.0 → 0.2.0");
  t.deepEqual(daemon.calls, ['drain {"timeoutMs":1234}']);
  t.deepEqual(restarts, ["restart"]);
  const [install] = await npm.calls();
  t.deepEqual(install!.args.slice(0, 6), ["install", "--global", "--prefix", join(dir, "prefix"), "app-daemon@0.2.0", "--registry"]);
  t.false(
    install!.args.some((a) => a.includes("npm-token-secret-5")),
    "the token is no argument",
  );
  t.is(install!.userConfig, "//127.0.0.1:9/feed/:_authToken=npm-token-secret-5\n");
  t.is(authLine("https://registry.example", "x"), "//registry.example/:_authToken=x\n");
});

test("a failed step resumes the daemon and names itself in one line (install, reconcile); without a daemon nothing is drained", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "apply-steps-"));
  const daemon = await daemonSocket(t, dir);
  const restarts: string[] = [];
  const failing = await fakeNpm(await mkdtemp(join(dir, "a-")), { fail: "404 Not Found - GET http://127.0.0.1:9/feed/app-daemon" });
  const install = await t.throwsAsync(() => applyUpdate(options(dir, failing.npm, daemon.path, restarts)));
  t.is(
    install?.message,
    "update to 0.2.0 failed at install: npm error 404 Not Found - GET http://127.0.0.1:9/feed/app-daemon; the running daemon was resumed",
  );
  t.deepEqual(daemon.calls, ['drain {"timeoutMs":1234}', "resume"]);

  const wrong = await fakeNpm(await mkdtemp(join(dir, "b-")), { version: "0.1.5" });
  const reconcile = await t.throwsAsync(() => applyUpdate(options(dir, wrong.npm, daemon.path, restarts)));
  t.regex(
    reconcile?.message ?? "",
    /^update to 0\.2\.0 failed at reconcile: .*says version 0\.1\.5, not 0\.2\.0; the running daemon was resumed$/,
  );
  t.deepEqual(restarts, [], "nothing restarted");

  const good = await fakeNpm(await mkdtemp(join(dir, "c-")), {});
  t.is(await applyUpdate(options(dir, good.npm, join(dir, "nobody.sock"), restarts)), "0.1.0 → 0.2.0");
  t.deepEqual(restarts, [], "a daemon that was not running is not started");
  t.is(daemon.calls.length, 4, "the live socket was not asked this time");
});
