// `app-daemon`: runs the agent gateway as a service and manages that service: run (the mesh, with
// the daemon's control socket and the periodic update check), install and uninstall (systemd,
// Windows, process; --dry-run for any manager on any OS), start/stop/restart, status, logs and
// update (check, or apply with drain: apply-update.ts). Exit codes: 0 ok, 1 failure (one line on
// stderr, no stack), 2 usage or configuration error, 3 `status` when not running.
// AutoApply runs `app-daemon update` as a detached child of the daemon (output in
// ~/.app/logs/update.log), since the update stops the very process that found the release.
import { execFile, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expandDataDir } from "../agents/credentials/index.js";
import { loadMeshConfig } from "../mesh-config.js";
import { type AgentsSettings, agentsSettings } from "../agents/module-settings.js";
import { ConfigError } from "../runtime/config/index.js";
import { applyUpdate } from "./apply-update.js";
import { type ControlSocket, callDaemon, queryDaemon, serveControlSocket } from "./control-socket.js";
import { attachedGateway, channelNotifier } from "./gateway-link.js";
import { startUpdateChecks } from "./update-checks.js";
import { serveHealthPort } from "./health-port.js";
import { systemdNotifier } from "./sd-notify.js";
import { checkForUpdate } from "./updates.js";
import {
  type DaemonAction,
  type DaemonHost,
  definitionPath,
  installActions,
  resolveManager,
  type ServiceManager,
  UNIT_NAME,
  uninstallActions,
  WINDOWS_SERVICE,
} from "./service-managers.js";
import { logPath, runningSupervisor, supervise } from "./supervisor.js";
import type { BridgeSettings, DaemonSettings } from "./settings.js";
import { type BridgeState, bridgeReport, changeBridge, channelMode, loadBridgeState, saveBridgeState } from "./bridge.js";
import { type BridgeClient, startBridgeClient } from "./bridge-client.js";

const run = promisify(execFile);
const packageRoot = fileURLToPath(new URL("../../", import.meta.url));

export const usage = `Usage: app-daemon [command] [options] [--Section:Key=value ...]

Commands:
  run [mode]           the agent gateway (default; modes as meshwork: all, serve <service>, gateway)
  install [--dry-run]  installs and enables the service (Daemon:ServiceManager: auto, systemd, windows, process)
  uninstall [--dry-run] stops, disables and removes it
  start | stop | restart   through the service manager (process: a detached supervisor; start returns when ready)
  status               running, starting, stopped or not-installed (exit 3 when not running)
  bridge status|enable|disable|passthrough   the chat-gateway bridge (~/.app/bridge.json; a running daemon follows at once)
  logs [-n N]          the last N lines of the daemon's log (50; journalctl under systemd)
  update [--check-only] applies the feed's newer release: drain, npm install, reconcile, restart
                       (--check-only: only whether there is one)

Options:
  --json     one JSON object (status, update --check-only, bridge, install --dry-run, uninstall --dry-run)
  --help     this text
`;

export class UsageError extends Error {}

interface Parsed {
  command: string;
  json: boolean;
  /** `logs -n N`. */
  lines: number;
  checkOnly: boolean;
  dryRun: boolean;
  /** `--Section:Key=value` settings and meshwork's own options. */
  settings: string[];
  /** What follows `run`. */
  rest: string[];
  /** `bridge <verb>`. */
  verb?: BridgeVerb;
}

const bridgeVerbs = ["status", "enable", "disable", "passthrough"] as const;
type BridgeVerb = (typeof bridgeVerbs)[number];

const commands = ["run", "install", "uninstall", "start", "stop", "restart", "status", "logs", "update", "bridge"];
/** What `start` launches under the process manager; not for people. */
const internal = ["supervise"];

export function parseDaemonArgs(argv: readonly string[]): Parsed {
  const [first] = argv;
  const command = first === undefined || first.startsWith("--") ? "run" : first;
  if (!commands.includes(command) && !internal.includes(command))
    throw new UsageError(`Unknown command '${command}'. Commands: ${commands.join(", ")}.`);
  const args = first === command ? argv.slice(1) : [...argv];
  if (command === "run" || command === "supervise")
    return { command, json: false, lines: 0, checkOnly: false, dryRun: false, settings: [], rest: args };
  const parsed: Parsed = { command, json: false, lines: 50, checkOnly: false, dryRun: false, settings: [], rest: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--json") parsed.json = true;
    else if (arg === "-n" && command === "logs") {
      const n = Number(args[++i]);
      if (!Number.isInteger(n) || n < 1) throw new UsageError("logs -n takes a positive whole number of lines.");
      parsed.lines = n;
    } else if (arg === "--dry-run" && (command === "install" || command === "uninstall")) parsed.dryRun = true;
    else if (arg === "--check-only" && command === "update") parsed.checkOnly = true;
    else if (command === "bridge" && parsed.verb === undefined && !arg.startsWith("-")) {
      if (!(bridgeVerbs as readonly string[]).includes(arg))
        throw new UsageError(`Unknown bridge command '${arg}'. Bridge commands: ${bridgeVerbs.join(", ")}.`);
      parsed.verb = arg as BridgeVerb;
    } else if (/^--[A-Za-z][\w.-]*:[\w:.-]+=/.test(arg) || /^--(environment|config-dir)=/.test(arg)) parsed.settings.push(arg);
    else throw new UsageError(`Unknown option '${arg}' for ${command}.`);
  }
  if (command === "bridge" && parsed.verb === undefined) throw new UsageError(`bridge needs one of: ${bridgeVerbs.join(", ")}.`);
  return parsed;
}

/** The user the service runs as: the sudo caller when there is one. */
function serviceUser(env: NodeJS.ProcessEnv): { user: string; home: string } {
  const sudoUser = env.SUDO_USER;
  if (sudoUser && sudoUser !== "root") {
    const line = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${sudoUser}:`));
    const home = line?.split(":")[5];
    if (home) return { user: sudoUser, home };
  }
  const me = userInfo();
  return { user: me.username, home: env.HOME || me.homedir || homedir() };
}

export interface DaemonContext {
  settings: DaemonSettings;
  bridge: BridgeSettings;
  updates: AgentsSettings["updates"];
  /** `Services:Host`: where the health port binds in serve modes. */
  servicesHost: string;
  host: DaemonHost;
  manager: ServiceManager;
}

export function daemonContext(flags: string[], env: NodeJS.ProcessEnv = process.env): DaemonContext {
  const config = loadMeshConfig({ flags, env });
  const settings = config.get(agentsSettings);
  const daemon = settings.daemon;
  const { user, home } = serviceUser(env);
  const dataDir = expandDataDir(settings.agentGateway.dataDir, process.cwd(), { ...env, HOME: home });
  const host: DaemonHost = {
    node: process.execPath,
    script: join(packageRoot, "bin", "app-daemon.js"),
    workingDirectory: packageRoot.replace(/\/$/, ""),
    user,
    home,
    dataDir,
    drainTimeoutMs: settings.updates.drainTimeout,
    systemdRoot: daemon.systemdRoot,
    platform: process.platform,
    systemdBooted: existsSync("/run/systemd/system"),
  };
  return {
    settings: daemon,
    bridge: settings.bridge,
    updates: settings.updates,
    servicesHost: config.runtime.services.host,
    host,
    manager: resolveManager(daemon.serviceManager, host),
  };
}

async function carryOut(actions: readonly DaemonAction[]): Promise<void> {
  for (const step of actions) {
    if (step.action === "write") {
      await mkdir(dirname(step.path!), { recursive: true });
      const temp = `${step.path}.${process.pid}.tmp`;
      await writeFile(temp, step.content ?? "", { mode: step.mode ?? 0o644 });
      if (step.mode !== undefined) await chmod(temp, step.mode);
      await rename(temp, step.path!);
    } else if (step.action === "remove") {
      await rm(step.path!, { force: true });
    } else {
      const [program, ...args] = splitCommand(step.command!);
      try {
        await run(program!, args);
      } catch (error) {
        const stderr = String((error as { stderr?: unknown }).stderr ?? "")
          .trim()
          .split("\n")[0];
        // Stopping or disabling what is not there is not a failure of uninstall.
        if (/\b(stop|disable|delete|Delete)\b/.test(step.command!)) continue;
        throw new Error(`${step.command} failed${stderr ? `: ${stderr}` : ""}`);
      }
    }
  }
}

/** Splits a command line of the plans: double quotes group words, a backslash-quote is a quote inside them; no shell. */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"((?:\\.|[^"\\])*)"|(\S+)/g))
    words.push(match[1] !== undefined ? match[1].replaceAll('\\"', '"') : match[2]!);
  return words;
}

const dryRunReport = (manager: ServiceManager, actions: readonly DaemonAction[]) => ({
  manager,
  actions: actions.map(({ action, path, command }) => ({ action, ...(path ? { path } : {}), ...(command ? { command } : {}) })),
});

function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { version: string }).version;
}

/** Resolves once the agent front's readiness answers 200 (at once when this process serves no agent front). */
async function untilReady(fronts: readonly { name: string; url: string }[]): Promise<void> {
  const agents = fronts.find((f) => f.name === "agents");
  if (!agents) return;
  for (;;) {
    const status = await fetch(new URL("/health/ready", agents.url), { signal: AbortSignal.timeout(5_000) }).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function managerCommand(context: DaemonContext, verb: "start" | "stop"): Promise<void> {
  const command =
    context.manager === "systemd"
      ? context.host.systemdRoot === "/"
        ? `systemctl ${verb} ${UNIT_NAME}`
        : undefined
      : `sc.exe ${verb} ${WINDOWS_SERVICE}`;
  if (!command) throw new UsageError(`${verb} needs the running systemd (Daemon:SystemdRoot is ${context.host.systemdRoot}).`);
  await carryOut([{ action: "run", command }]);
}

/** Starts the installed daemon; under the process manager, returns once it reports running. */
async function startDaemon(context: DaemonContext, flags: readonly string[]): Promise<void> {
  if (!existsSync(definitionPath(context.manager, context.host)))
    throw new Error("app-daemon is not installed (run app-daemon install first)");
  if (context.manager !== "process") return managerCommand(context, "start");
  const { dataDir } = context.host;
  if (runningSupervisor(dataDir)) return;
  // What the definition names: after an update, the new version's node and script.
  const definition = processDefinition(context.host);
  const supervisor = spawn(definition.node, [definition.script, "supervise", ...flags], {
    detached: true,
    stdio: "ignore",
    env: process.env,
  });
  supervisor.unref();
  const deadline = Date.now() + 120_000;
  const socket = join(dataDir, "daemon.sock");
  for (;;) {
    const live = await queryDaemon(socket);
    if (live?.state === "running") return;
    if (supervisor.exitCode !== null || Date.now() > deadline) {
      throw new Error(`app-daemon did not become ready; the end of ${logPath(dataDir)}:\n${await tail(logPath(dataDir), 20)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `~/.app/daemon/service.json`'s node and script (the running ones when it names none). */
function processDefinition(host: DaemonHost): { node: string; script: string } {
  try {
    const definition = JSON.parse(readFileSync(definitionPath("process", host), "utf8")) as { node?: unknown; script?: unknown };
    if (typeof definition.node === "string" && typeof definition.script === "string")
      return { node: definition.node, script: definition.script };
  } catch {
    // Unreadable: the running version's.
  }
  return { node: host.node, script: host.script };
}

/**
 * Restarts the installed daemon through its manager. Under systemd, an AutoApply update runs inside
 * the unit's own cgroup, so it asks for the restart without waiting (`--no-block`) and is ended by it.
 */
async function restartDaemon(context: DaemonContext, flags: readonly string[]): Promise<void> {
  if (context.manager === "systemd") {
    if (context.host.systemdRoot !== "/")
      throw new UsageError(`restart needs the running systemd (Daemon:SystemdRoot is ${context.host.systemdRoot}).`);
    const noBlock = process.env.APP_DAEMON_AUTO_APPLY === "1" ? "--no-block " : "";
    await carryOut([{ action: "run", command: `systemctl restart ${noBlock}${UNIT_NAME}` }]);
    return;
  }
  await stopDaemon(context);
  await startDaemon(context, flags);
}

/** Settings flags among a `run`'s arguments: what an update started from it is given. */
const settingFlags = (args: readonly string[]) =>
  args.filter((arg) => /^--[A-Za-z][\w.-]*:[\w:.-]+=/.test(arg) || /^--(environment|config-dir)=/.test(arg));

/** Stops the daemon; stopping a stopped daemon is fine. */
async function stopDaemon(context: DaemonContext): Promise<void> {
  if (context.manager !== "process") {
    if (existsSync(definitionPath(context.manager, context.host))) await managerCommand(context, "stop");
    return;
  }
  const pid = runningSupervisor(context.host.dataDir);
  if (!pid) return;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + context.host.drainTimeoutMs + 20_000;
  while (runningSupervisor(context.host.dataDir) === pid) {
    if (Date.now() > deadline) throw new Error(`the supervisor (pid ${pid}) did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function tail(path: string, lines: number): Promise<string> {
  if (!existsSync(path)) return "";
  const text = await readFile(path, "utf8");
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  return all
    .slice(-lines)
    .map((line) => `${line}\n`)
    .join("");
}

async function daemonLogs(context: DaemonContext, lines: number): Promise<string> {
  if (context.manager === "systemd") {
    const { stdout } = await run("journalctl", ["-u", "app-daemon", "-n", String(lines), "-o", "cat", "--no-pager"]);
    return stdout;
  }
  return tail(logPath(context.host.dataDir), lines);
}

export interface StatusReport {
  state: "running" | "starting" | "stopped" | "not-installed";
  version: string;
  uptimeSeconds: number | null;
  pid: number | null;
  manager: ServiceManager;
  health: unknown;
  /** From a running daemon: whether an update's drain holds new turns, and the fronts it serves. */
  draining?: boolean;
  fronts?: { name: string; url: string }[];
}

export async function daemonStatus(context: DaemonContext): Promise<StatusReport> {
  const live = await queryDaemon(join(context.host.dataDir, "daemon.sock"));
  if (live) return { ...live, version: live.version ?? version(), manager: context.manager };
  const installed = existsSync(definitionPath(context.manager, context.host));
  return {
    state: installed ? "stopped" : "not-installed",
    version: version(),
    uptimeSeconds: null,
    pid: null,
    manager: context.manager,
    health: null,
  };
}

/** Runs a command; answers the exit code (the output is written). */
export async function runDaemonCommand(
  argv: readonly string[],
  out: (text: string) => void = (t) => process.stdout.write(t),
): Promise<number> {
  const parsed = parseDaemonArgs(argv);
  if (parsed.command === "run") {
    const { main } = await import("../cli.js");
    // The mode words (`serve agents`) lead; the settings follow.
    const firstFlag = parsed.rest.findIndex((a) => a.startsWith("--"));
    const context = daemonContext(firstFlag === -1 ? [] : parsed.rest.slice(firstFlag));
    const probes =
      parsed.rest[0] === "serve"
        ? await serveHealthPort(context.servicesHost, context.settings.healthPort, { version: version() })
        : undefined;
    const flags = settingFlags(parsed.rest);
    let ready = false;
    let socket: ControlSocket | undefined;
    const setDraining = (draining: boolean) => {
      attachedGateway()?.setDraining(draining);
      probes?.setReady(ready && !draining);
      socket?.setInfo({ draining });
    };
    socket = await serveControlSocket(
      join(context.host.dataDir, "daemon.sock"),
      { version: version(), manager: context.manager, ...(probes ? { healthUrl: probes.url } : {}) },
      {
        // An update's drain: hold new turns, fail readiness, answer once the turns in flight are done
        // (or the timeout passed: `drained: false` and how many still run).
        "POST /drain": async (body) => {
          const asked = Number((body as { timeoutMs?: unknown } | undefined)?.timeoutMs);
          const timeoutMs = Number.isFinite(asked) && asked >= 0 ? asked : context.host.drainTimeoutMs;
          setDraining(true);
          const gateway = attachedGateway();
          if (!gateway) return { drained: true, inFlight: 0 };
          let timer: NodeJS.Timeout | undefined;
          const drained = await Promise.race([
            gateway.idle().then(() => true),
            new Promise<boolean>((resolve) => {
              timer = setTimeout(() => resolve(false), timeoutMs);
            }),
          ]);
          clearTimeout(timer);
          return { drained, inFlight: gateway.turnsInFlight() };
        },
        "POST /resume": () => {
          setDraining(false);
          return { resumed: true };
        },
        // `app-daemon bridge …` changed bridge.json: follow it at once.
        "POST /bridge/reload": async () => {
          await followBridge();
          return { connected: bridge?.connected ?? false };
        },
        "POST /bridge/status": () => ({ connected: bridge?.connected ?? false }),
      },
    );
    let bridge: BridgeClient | undefined;
    let bridgeState: BridgeState | undefined;
    /** Connects the bridge when bridge.json says enabled and autoConnect (and Bridge:Url is set), else closes it. */
    const followBridge = async () => {
      bridgeState = await loadBridgeState(context.host.dataDir, context.bridge);
      const wanted = bridgeState.enabled && bridgeState.autoConnect && context.bridge.url !== undefined;
      if (!wanted) {
        bridge?.close();
        bridge = undefined;
        return;
      }
      if (bridge) return;
      bridge = startBridgeClient({
        url: context.bridge.url!,
        ...(context.bridge.token ? { token: context.bridge.token } : {}),
        modeOf: (channel) => (bridgeState ? channelMode(bridgeState, channel) : "Passthrough"),
        observe: async (chat) => {
          await attachedGateway()?.audit("bridge.observe", chat.channel, { conversation: chat.conversation, length: chat.text.length });
        },
        answer: async (chat) => {
          const gateway = attachedGateway();
          if (!gateway) throw new Error("this process serves no agent gateway to answer with");
          return gateway.chatTurn(`bridge:${chat.channel}:${chat.conversation}`, chat.text);
        },
        log,
      });
    };
    const log = (level: "info" | "warn", message: string) =>
      process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), daemon: message })}\n`);
    let checks: { stop(): void } | undefined;
    let applying = false;
    const autoApply = () => {
      if (applying) return Promise.resolve();
      applying = true;
      mkdirSync(join(context.host.dataDir, "logs"), { recursive: true, mode: 0o700 });
      const output = openSync(join(context.host.dataDir, "logs", "update.log"), "a", 0o600);
      const child = spawn(process.execPath, [context.host.script, "update", ...flags], {
        detached: true,
        stdio: ["ignore", output, output],
        env: { ...process.env, APP_DAEMON_AUTO_APPLY: "1" },
      });
      closeSync(output);
      child.once("exit", (code) => {
        applying = false;
        if (code !== 0) log("warn", `the automatic update exited with ${code}; see ${join(context.host.dataDir, "logs", "update.log")}`);
      });
      child.once("error", () => {
        applying = false;
      });
      child.unref();
      return Promise.resolve();
    };
    const startChecks = () => {
      const { updates } = context;
      checks = startUpdateChecks({
        intervalMs: updates.checkInterval,
        check: () =>
          checkForUpdate({
            feed: updates.packageFeedUrl,
            packageId: updates.packageId,
            currentVersion: version(),
            preRelease: updates.preRelease,
            token: updates.feedToken,
          }),
        statePath: join(context.host.dataDir, "update-state.json"),
        announce: async (update) => {
          const gateway = attachedGateway();
          if (gateway) await gateway.announceUpdate(update);
          else log("info", "this process serves no agent gateway: the update is not recorded as an event");
        },
        ...(updates.notifyChannels
          ? {
              // TODO(channels): the channel router registers its notifier with setChannelNotifier.
              notifyChannels: async (text: string) => channelNotifier()?.(text),
            }
          : {}),
        ...(updates.autoApply ? { apply: autoApply } : {}),
        log,
      });
    };
    const systemd = systemdNotifier(process.env, (error) => process.stderr.write(`app-daemon: sd_notify failed (${error.message})\n`));
    await systemd.notify({ STATUS: "Starting the agent gateway" });
    await main(parsed.rest, {
      up: (fronts) => {
        void untilReady(fronts).then(async () => {
          ready = true;
          socket.setInfo({ fronts: fronts.map(({ name, url }) => ({ name, url })) });
          socket.setState("running");
          probes?.setReady(true);
          startChecks();
          await followBridge().catch((error: Error) => log("warn", `the bridge was not started: ${error.message}`));
          await systemd.notify({
            READY: 1,
            MAINPID: process.pid,
            STATUS: `Serving ${fronts.map((f) => `${f.name} on ${f.url}`).join(", ") || "the service host"}`,
          });
        });
      },
      stopping: async () => {
        checks?.stop();
        bridge?.close();
        socket.close();
        probes?.setReady(false);
        await systemd.notify({ STOPPING: 1, STATUS: "Draining and stopping" });
      },
    });
    return 0;
  }
  if (parsed.command === "supervise") {
    const context = daemonContext(parsed.rest.filter((a) => a.startsWith("--")));
    await supervise({
      node: context.host.node,
      script: context.host.script,
      args: ["run", ...parsed.rest],
      dataDir: context.host.dataDir,
      stopTimeoutMs: context.host.drainTimeoutMs + 15_000,
      env: process.env,
    });
    return 0;
  }
  const context = daemonContext(parsed.settings);
  if (parsed.command === "start" || parsed.command === "stop" || parsed.command === "restart") {
    if (parsed.command !== "start") await stopDaemon(context);
    if (parsed.command !== "stop") await startDaemon(context, parsed.settings);
    out(`app-daemon ${parsed.command === "stop" ? "stopped" : "running"} (${context.manager})\n`);
    return 0;
  }
  if (parsed.command === "update") {
    const { updates } = context;
    const check = await checkForUpdate({
      feed: updates.packageFeedUrl,
      packageId: updates.packageId,
      currentVersion: version(),
      preRelease: updates.preRelease,
      token: updates.feedToken,
    });
    if (parsed.checkOnly || !check.updateAvailable) {
      out(
        parsed.json
          ? `${JSON.stringify(check)}\n`
          : check.updateAvailable
            ? `${check.packageId} ${check.currentVersion} → ${check.latestVersion} is available\n`
            : `${check.packageId} ${check.currentVersion} is up to date\n`,
      );
      return 0;
    }
    const line = await applyUpdate({
      check,
      feed: updates.packageFeedUrl,
      ...(updates.feedToken ? { token: updates.feedToken } : {}),
      ...(updates.installPrefix ? { installPrefix: updates.installPrefix } : {}),
      socketPath: join(context.host.dataDir, "daemon.sock"),
      drainTimeoutMs: updates.drainTimeout,
      flags: parsed.settings,
      installed: existsSync(definitionPath(context.manager, context.host)),
      restart: () => restartDaemon(context, parsed.settings),
      node: context.host.node,
      platform: context.host.platform,
    });
    out(parsed.json ? `${JSON.stringify({ ...check, applied: true })}\n` : `${line}\n`);
    return 0;
  }
  if (parsed.command === "bridge") {
    const socketPath = join(context.host.dataDir, "daemon.sock");
    let state = await loadBridgeState(context.host.dataDir, context.bridge);
    if (parsed.verb !== "status") {
      state = changeBridge(state, parsed.verb!);
      await saveBridgeState(context.host.dataDir, state);
    }
    const live = await queryDaemon(socketPath);
    const answer = live
      ? ((await callDaemon(socketPath, "POST", parsed.verb === "status" ? "/bridge/status" : "/bridge/reload")) as { connected?: boolean })
      : {};
    const report = bridgeReport(state, answer.connected === true);
    out(
      parsed.json
        ? `${JSON.stringify(report)}\n`
        : `bridge ${report.effectiveMode.toLowerCase()}${report.overrideChannels.length ? ` (intercepting ${report.overrideChannels.join(", ")})` : ""}, ${report.connected ? "connected" : "not connected"}\n`,
    );
    return 0;
  }
  if (parsed.command === "logs") {
    out(await daemonLogs(context, parsed.lines));
    return 0;
  }
  if (parsed.command === "status") {
    const report = await daemonStatus(context);
    out(
      parsed.json
        ? `${JSON.stringify(report)}\n`
        : `app-daemon ${report.state} (${report.manager}${report.pid ? `, pid ${report.pid}` : ""})\n`,
    );
    return report.state === "running" ? 0 : 3;
  }
  const actions =
    parsed.command === "install" ? installActions(context.manager, context.host) : uninstallActions(context.manager, context.host);
  if (parsed.dryRun) {
    const report = dryRunReport(context.manager, actions);
    out(parsed.json ? `${JSON.stringify(report)}\n` : `${actions.map((a) => `${a.action} ${a.path ?? a.command}`).join("\n")}\n`);
    return 0;
  }
  if (context.manager === "windows" && context.host.platform !== "win32") {
    throw new UsageError("Daemon:ServiceManager windows installs only on Windows (--dry-run shows what it would do).");
  }
  await carryOut(actions);
  out(
    parsed.json
      ? `${JSON.stringify({ manager: context.manager, done: parsed.command })}\n`
      : `app-daemon ${parsed.command}ed (${context.manager})\n`,
  );
  return 0;
}

export async function daemonMain(argv: readonly string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(usage);
    return;
  }
  try {
    const code = await runDaemonCommand(argv);
    if (code !== 0) process.exitCode = code;
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`app-daemon: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`app-daemon: ${error instanceof Error ? error.message : "failed"}\n`);
    process.exit(1);
  }
}
