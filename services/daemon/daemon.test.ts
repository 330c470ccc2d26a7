// app-daemon: install/uninstall plans for every manager (--dry-run changes nothing), the systemd
// unit verified by systemd-analyze and enabled offline with `systemctl --root`, the process
// manager's definition, status from the control socket, and the exit codes of the real command.
import { execFile } from "node:child_process";
import { existsSync, lstatSync, readFileSync, statSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import test from "ava";
import { daemonContext, daemonStatus, parseDaemonArgs, runDaemonCommand, splitCommand } from "./cli.js";
import { serveControlSocket } from "./control-socket.js";
import { systemdNotifier } from "./sd-notify.js";
import { notifySocket } from "../../test/support/notify-socket.js";

const exec = promisify(execFile);
const bin = fileURLToPath(new URL("../../bin/app-daemon.js", import.meta.url));

async function place() {
  const base = await mkdtemp(join(tmpdir(), "app-daemon-"));
  const dataDir = join(base, "app");
  const root = join(base, "root");
  return { base, dataDir, root, flags: [`--AgentGateway:DataDir=${dataDir}`, `--Daemon:SystemdRoot=${root}`] };
}

/** A whole mesh of its own: embedded database under `base`, every port free, nothing outside reached. */
function meshFlags(base: string, dataDir: string): string[] {
  return [
    `--Data:Dir=${join(base, "data")}`,
    `--AgentGateway:DataDir=${dataDir}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Gateway:Telemetry:Enabled=false",
    "--Protection:TorExits:SourceUrl=http://127.0.0.1:9/none",
  ];
}

async function command(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await runDaemonCommand(args, (text) => {
    out += text;
  });
  return { code, out };
}

test("--dry-run prints the plan of every manager as one JSON object and changes nothing", async (t) => {
  const { flags, root, dataDir } = await place();
  for (const manager of ["systemd", "windows", "process"]) {
    for (const verb of ["install", "uninstall"]) {
      const { code, out } = await command([verb, "--dry-run", "--json", `--Daemon:ServiceManager=${manager}`, ...flags]);
      t.is(code, 0);
      const report = JSON.parse(out) as { manager: string; actions: { action: string; path?: string; command?: string }[] };
      t.is(report.manager, manager);
      t.true(report.actions.length > 0);
      for (const a of report.actions)
        t.true(["write", "remove", "run"].includes(a.action) && (a.path !== undefined || a.command !== undefined));
    }
  }
  const windows = JSON.parse((await command(["install", "--dry-run", "--json", "--Daemon:ServiceManager=windows", ...flags])).out);
  const commands = windows.actions.map((a: { command?: string }) => a.command).filter(Boolean);
  t.true(commands.some((c: string) => c.startsWith("sc.exe create AppDaemon") && c.endsWith("start= auto")));
  t.true(commands.includes("sc.exe failure AppDaemon reset= 86400 actions= restart/5000/restart/10000/restart/30000"));
  t.true(commands.some((c: string) => c.includes('"Bridge Gateway"') && c.includes("ONSTART") && c.includes("SYSTEM")));
  t.true(commands.some((c: string) => c.includes('"Bridge Gateway Watchdog"') && c.includes("/SC MINUTE /MO 1")));
  t.false(existsSync(root), "nothing written");
  t.false(existsSync(dataDir));
});

test("systemd: the unit says what the interface asks, passes systemd-analyze verify, and install/uninstall are idempotent offline", async (t) => {
  const { flags, root, dataDir } = await place();
  const systemd = [...flags, "--Daemon:ServiceManager=systemd", "--Updates:DrainTimeout=00:01:00"];
  t.is((await command(["install", ...systemd])).code, 0);
  const unitFile = join(root, "etc/systemd/system/app-daemon.service");
  const unit = readFileSync(unitFile, "utf8");
  for (const line of [
    "After=network-online.target",
    "Wants=network-online.target",
    "Type=notify",
    `ExecStart=${process.execPath} ${bin} run`,
    `EnvironmentFile=-${join(dataDir, "daemon.env")}`,
    "Restart=on-failure",
    "RestartSec=5",
    "RestartPreventExitStatus=2",
    "ProtectSystem=strict",
    `ReadWritePaths=${dataDir}`,
    "PrivateTmp=true",
    "NoNewPrivileges=true",
    "TimeoutStopSec=75",
    "WantedBy=multi-user.target",
  ]) {
    t.true(unit.split("\n").includes(line), line);
  }
  t.regex(unit, /^User=\S+$/m);
  t.regex(unit, /^Environment=HOME=\/\S*$/m);
  t.regex(unit, /^WorkingDirectory=\/\S+$/m);
  const verified = await exec("systemd-analyze", ["verify", unitFile]);
  t.is(`${verified.stdout}${verified.stderr}`, "", "systemd-analyze verify is silent");
  const wanted = join(root, "etc/systemd/system/multi-user.target.wants/app-daemon.service");
  t.true(lstatSync(wanted).isSymbolicLink(), "enabled");
  t.is((await command(["install", ...systemd])).code, 0, "install again");
  t.is(readFileSync(unitFile, "utf8"), unit);
  t.true(lstatSync(wanted).isSymbolicLink());
  t.is((await command(["uninstall", ...systemd])).code, 0);
  t.false(existsSync(unitFile));
  t.false(existsSync(wanted), "disabled");
  t.is((await command(["uninstall", ...systemd])).code, 0, "uninstalling what is not installed is fine");
});

test("process: install writes the definition (600); status says stopped, then not-installed after uninstall", async (t) => {
  const { flags, dataDir } = await place();
  const processFlags = [...flags, "--Daemon:ServiceManager=process"];
  let status = await command(["status", "--json", ...processFlags]);
  t.is(status.code, 3);
  t.like(JSON.parse(status.out), { state: "not-installed", manager: "process", pid: null });
  t.is((await command(["install", ...processFlags])).code, 0);
  const definition = join(dataDir, "daemon/service.json");
  t.is(statSync(definition).mode & 0o777, 0o600);
  t.like(JSON.parse(readFileSync(definition, "utf8")), { node: process.execPath, script: bin, args: ["run"] });
  status = await command(["status", "--json", ...processFlags]);
  t.is(status.code, 3);
  t.like(JSON.parse(status.out), { state: "stopped", version: "0.1.0" });
  t.is((await command(["uninstall", ...processFlags])).code, 0);
  t.false(existsSync(definition));
});

test("status: a running daemon answers on its control socket (600)", async (t) => {
  const { flags, dataDir } = await place();
  const context = daemonContext([...flags, "--Daemon:ServiceManager=process"]);
  const socketPath = join(dataDir, "daemon.sock");
  const socket = await serveControlSocket(socketPath, { version: "9.9.9", manager: "process" });
  t.teardown(() => socket.close());
  t.is(statSync(socketPath).mode & 0o777, 0o600);
  t.like(await daemonStatus(context), { state: "starting", pid: process.pid, version: "9.9.9", manager: "process" });
  socket.setState("running");
  const running = await command(["status", "--json", ...flags, "--Daemon:ServiceManager=process"]);
  t.is(running.code, 0);
  t.like(JSON.parse(running.out), { state: "running", pid: process.pid, health: "Healthy" });
  await t.throwsAsync(() => serveControlSocket(socketPath, { version: "9.9.9", manager: "process" }), {
    message: /another app-daemon is running/,
  });
});

test("the command: usage errors exit 2 with one line, status of a stopped daemon exits 3", async (t) => {
  const { flags } = await place();
  const bad = await exec(process.execPath, [bin, "bogus"]).catch((e: { code: number; stderr: string }) => e);
  t.is((bad as { code: number }).code, 2);
  t.is(
    (bad as { stderr: string }).stderr,
    "app-daemon: Unknown command 'bogus'. Commands: run, install, uninstall, start, stop, restart, status, logs, update, bridge.\n",
  );
  const stopped = await exec(process.execPath, [bin, "status", "--json", ...flags, "--Daemon:ServiceManager=process"]).catch(
    (e: { code: number; stdout: string }) => e,
  );
  t.is((stopped as { code: number }).code, 3);
  t.like(JSON.parse((stopped as { stdout: string }).stdout), { state: "not-installed" });
  const meshwork = fileURLToPath(new URL("../../bin/meshwork.js", import.meta.url));
  const restart = await exec(process.execPath, [meshwork, "gateway", "restart", ...flags, "--Daemon:ServiceManager=process"]).catch(
    (e: { code: number; stderr: string }) => e,
  );
  t.is((restart as { code: number }).code, 1, "meshwork gateway restart is app-daemon restart");
  t.is((restart as { stderr: string }).stderr, "app-daemon: app-daemon is not installed (run app-daemon install first)\n");
});

test("command lines of the plans split like a shell's double quotes", (t) => {
  t.deepEqual(splitCommand('schtasks.exe /Create /TN "Bridge Gateway" /TR "C:\\x y\\a.cmd"'), [
    "schtasks.exe",
    "/Create",
    "/TN",
    "Bridge Gateway",
    "/TR",
    "C:\\x y\\a.cmd",
  ]);
  t.deepEqual(splitCommand('sc.exe create AppDaemon binPath= "\\"C:\\node.exe\\" run" start= auto'), [
    "sc.exe",
    "create",
    "AppDaemon",
    "binPath=",
    '"C:\\node.exe" run',
    "start=",
    "auto",
  ]);
});

test("run: sd_notify on a real datagram socket (READY=1 with MAINPID once the fronts serve, STOPPING=1 at SIGTERM, exit 0); status sees it running", async (t) => {
  const { base, dataDir } = await place();
  const notifyPath = join(base, "notify.sock");
  const { received } = await notifySocket(t, notifyPath);
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, [bin, "run", ...meshFlags(base, dataDir), "--Logging:Level=warn"], {
    env: { PATH: process.env.PATH, HOME: base, NOTIFY_SOCKET: notifyPath, WATCHDOG_USEC: "400000" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(() => child.kill("SIGKILL"));
  const until = async (what: string, check: () => boolean) => {
    const deadline = Date.now() + 120_000;
    while (!check()) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${what} did not come (stderr: ${stderr.slice(0, 500)})`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await until("READY=1", () => received.some((m) => m.split("\n").includes("READY=1")));
  const ready = received.find((m) => m.split("\n").includes("READY=1"))!;
  t.true(ready.split("\n").includes(`MAINPID=${child.pid}`));
  t.regex(ready, /^STATUS=Serving /m);
  t.true(received[0]!.startsWith("STATUS=Starting"), "a status before ready");
  await until("WATCHDOG=1", () => received.includes("WATCHDOG=1"));
  const status = await command(["status", "--json", `--AgentGateway:DataDir=${dataDir}`, "--Daemon:ServiceManager=process"]);
  t.is(status.code, 0);
  t.like(JSON.parse(status.out), { state: "running", pid: child.pid });
  child.kill("SIGTERM");
  t.is(await exited, 0, "a graceful stop");
  t.true(received.some((m) => m.split("\n").includes("STOPPING=1")));
  t.notRegex(stderr, /sd_notify failed/);
});

test("process manager end to end: start refused before install, start returns when ready, a crash is restarted after 5 s, logs, stop (twice)", async (t) => {
  t.timeout(600_000);
  const { base, dataDir } = await place();
  const flags = [...meshFlags(base, dataDir), "--Daemon:ServiceManager=process"];
  t.teardown(() => command(["stop", ...flags]));
  await t.throwsAsync(() => command(["start", ...flags]), { message: "app-daemon is not installed (run app-daemon install first)" });
  t.is((await command(["install", ...flags])).code, 0);
  t.is((await command(["start", ...flags])).out, "app-daemon running (process)\n", "start returns once the daemon is ready");
  const context = daemonContext(flags);
  const first = await daemonStatus(context);
  t.is(first.state, "running");
  process.kill(first.pid!, "SIGKILL");
  let again = first;
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline && !(again.state === "running" && again.pid !== first.pid)) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    again = await daemonStatus(context);
  }
  t.is(again.state, "running", "restarted");
  t.not(again.pid, first.pid);
  const logs = await command(["logs", "-n", "200", ...flags]);
  t.regex(logs.out, /restarting in 5 s/);
  t.true(logs.out.trim().split("\n").length <= 200);
  t.is((await command(["logs", "-n", "2", ...flags])).out.trim().split("\n").length, 2);
  t.is((await command(["stop", ...flags])).code, 0);
  const stopped = await command(["status", "--json", ...flags]);
  t.is(stopped.code, 3);
  t.like(JSON.parse(stopped.out), { state: "stopped" });
  t.is((await command(["stop", ...flags])).code, 0, "stopping a stopped daemon");
  t.throws(() => parseDaemonArgs(["logs", "-n", "0"]), { message: /positive whole number/ });
});

test("run serve <service>: the probes answer on Daemon:HealthPort", async (t) => {
  t.timeout(300_000);
  const { base, dataDir } = await place();
  const { spawn } = await import("node:child_process");
  const child = spawn(
    process.execPath,
    [bin, "run", "serve", "tracking", ...meshFlags(base, dataDir), "--Daemon:HealthPort=0", "--Logging:Level=warn"],
    { env: { PATH: process.env.PATH, HOME: base }, stdio: "ignore" },
  );
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(() => child.kill("SIGKILL"));
  const context = daemonContext([`--AgentGateway:DataDir=${dataDir}`, "--Daemon:ServiceManager=process"]);
  let status = await daemonStatus(context);
  const deadline = Date.now() + 240_000;
  while (status.state !== "running" && Date.now() < deadline && child.exitCode === null) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    status = await daemonStatus(context);
  }
  t.is(status.state, "running");
  const url = (status as { healthUrl?: string }).healthUrl;
  t.regex(url ?? "", /^http:\/\/127\.0\.0\.1:\d+$/);
  const live = await fetch(`${url}/health/live`);
  t.is(live.status, 200);
  t.deepEqual(await live.json(), { status: "Live" });
  const ready = await fetch(`${url}/health/ready`);
  t.is(ready.status, 200);
  const health = await fetch(`${url}/health`);
  t.like(await health.json(), { status: "Healthy", pid: child.pid, version: "0.1.0" });
  t.is((await fetch(`${url}/nope`)).status, 404);
  child.kill("SIGTERM");
  t.is(await exited, 0);
});

test("sd_notify: one datagram per message to a path or an abstract socket; nothing without NOTIFY_SOCKET", async (t) => {
  const { base } = await place();
  for (const address of [join(base, "n.sock"), `@meshwork-test-${process.pid}-${Date.now()}`]) {
    const { received } = await notifySocket(t, address);
    const errors: Error[] = [];
    const notifier = systemdNotifier({ PATH: process.env.PATH, NOTIFY_SOCKET: address }, (e) => errors.push(e));
    await notifier.notify({ READY: 1, MAINPID: 4242, STATUS: "two\nlines" });
    const deadline = Date.now() + 30_000;
    while (!received.includes("READY=1\nMAINPID=4242\nSTATUS=two lines") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.true(received.includes("READY=1\nMAINPID=4242\nSTATUS=two lines"), `${address}: ${JSON.stringify(received)}`);
    t.deepEqual(errors, []);
    notifier.close();
  }
  const failures: Error[] = [];
  await systemdNotifier({ PATH: process.env.PATH, NOTIFY_SOCKET: join(base, "nobody.sock") }, (e) => failures.push(e)).notify({ READY: 1 });
  t.is(failures.length, 1, "a socket nobody listens on is reported, not thrown");
  await systemdNotifier({ PATH: process.env.PATH }).notify({ READY: 1 });
});
