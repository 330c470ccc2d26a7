// What `app-daemon install` and `uninstall` do under each service manager, as a list of actions
// (write a file, remove a file, run a command). `--dry-run` prints the list for any manager on any
// OS; a real install carries it out. Pure: every path and the user come in through DaemonHost.
import { join, posix, win32 } from "node:path";
import type { ServiceManagerSetting } from "./settings.js";

export type ServiceManager = Exclude<ServiceManagerSetting, "auto">;

export interface DaemonAction {
  action: "write" | "remove" | "run";
  path?: string;
  command?: string;
  /** A written file's content (not printed by --dry-run) and mode. */
  content?: string;
  mode?: number;
}

/** Where the daemon lives and who runs it: found once by the CLI, fixed in tests. */
export interface DaemonHost {
  /** Absolute path of the node binary (`process.execPath`). */
  node: string;
  /** Absolute path of bin/app-daemon.js. */
  script: string;
  /** The package root, the unit's WorkingDirectory. */
  workingDirectory: string;
  /** The user the service runs as (the sudo caller) and their home. */
  user: string;
  home: string;
  /** `AgentGateway:DataDir` expanded (`~/.app`). */
  dataDir: string;
  /** `Updates:DrainTimeout` in milliseconds. */
  drainTimeoutMs: number;
  systemdRoot: string;
  platform: NodeJS.Platform;
  /** Whether `/run/systemd/system` exists. */
  systemdBooted: boolean;
}

export const UNIT_NAME = "app-daemon.service";
export const WINDOWS_SERVICE = "AppDaemon";
export const WINDOWS_TASKS = ["Bridge Gateway", "Bridge Gateway Watchdog"] as const;

export function resolveManager(setting: ServiceManagerSetting, host: Pick<DaemonHost, "platform" | "systemdBooted">): ServiceManager {
  if (setting !== "auto") return setting;
  if (host.platform === "win32") return "windows";
  return host.systemdBooted ? "systemd" : "process";
}

export function unitPath(host: Pick<DaemonHost, "systemdRoot">): string {
  return join(host.systemdRoot, "etc", "systemd", "system", UNIT_NAME);
}

/** `~/.app/daemon/service.json`: the process manager's definition. */
export function processDefinitionPath(host: Pick<DaemonHost, "dataDir">): string {
  return join(host.dataDir, "daemon", "service.json");
}

const quoteExec = (arg: string) => (/[\s"\\]/.test(arg) ? `"${arg.replace(/(["\\])/g, "\\$1")}"` : arg);

/** The systemd unit. TimeoutStopSec leaves the drain 15 s more. */
export function systemdUnit(host: DaemonHost): string {
  const stopSeconds = Math.ceil(host.drainTimeoutMs / 1000) + 15;
  return `# app-daemon: the Meshwork agent gateway as a systemd service (written by \`app-daemon install\`).
[Unit]
Description=Meshwork agent gateway (app-daemon)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
# READY=1, STATUS=, STOPPING=1 and WATCHDOG=1 are sent with systemd-notify, a child of the daemon.
NotifyAccess=all
ExecStart=${quoteExec(host.node)} ${quoteExec(host.script)} run
WorkingDirectory=${host.workingDirectory}
User=${host.user}
Environment=HOME=${host.home}
EnvironmentFile=-${posix.join(host.dataDir, "daemon.env")}
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=2
TimeoutStopSec=${stopSeconds}
ProtectSystem=strict
ReadWritePaths=${host.dataDir}
PrivateTmp=true
NoNewPrivileges=true

[Install]
WantedBy=multi-user.target
`;
}

/** `systemctl` for the unit's root: offline (`--root=`) unless it is the running system's. */
function systemctl(host: DaemonHost, args: string): string {
  return host.systemdRoot === "/" ? `systemctl ${args}` : `systemctl --root=${host.systemdRoot} ${args}`;
}

function windowsScripts(host: DaemonHost): { service: string; watchdog: string } {
  const bridge = win32.join(host.home, ".bridge");
  return { service: win32.join(bridge, "gateway-service.cmd"), watchdog: win32.join(bridge, "gateway-watchdog.cmd") };
}

export function installActions(manager: ServiceManager, host: DaemonHost): DaemonAction[] {
  const run = `"${host.node}" "${host.script}" run`;
  switch (manager) {
    case "systemd": {
      const live = host.systemdRoot === "/";
      return [
        { action: "write", path: unitPath(host), content: systemdUnit(host), mode: 0o644 },
        ...(live ? [{ action: "run" as const, command: systemctl(host, "daemon-reload") }] : []),
        { action: "run", command: systemctl(host, `enable ${UNIT_NAME}`) },
      ];
    }
    case "windows": {
      const scripts = windowsScripts(host);
      return [
        { action: "write", path: scripts.service, content: `@echo off\r\n${run}\r\n` },
        {
          action: "write",
          path: scripts.watchdog,
          content: `@echo off\r\nsc.exe query ${WINDOWS_SERVICE} | find "RUNNING" >nul || sc.exe start ${WINDOWS_SERVICE}\r\n`,
        },
        { action: "run", command: `sc.exe create ${WINDOWS_SERVICE} binPath= "${run.replaceAll('"', '\\"')}" start= auto` },
        { action: "run", command: `sc.exe failure ${WINDOWS_SERVICE} reset= 86400 actions= restart/5000/restart/10000/restart/30000` },
        { action: "run", command: `schtasks.exe /Create /F /TN "${WINDOWS_TASKS[0]}" /SC ONSTART /RU SYSTEM /TR "${scripts.service}"` },
        { action: "run", command: `schtasks.exe /Create /F /TN "${WINDOWS_TASKS[1]}" /SC MINUTE /MO 1 /TR "${scripts.watchdog}"` },
      ];
    }
    case "process":
      return [
        {
          action: "write",
          path: processDefinitionPath(host),
          content: `${JSON.stringify({ version: 1, node: host.node, script: host.script, args: ["run"], workingDirectory: host.workingDirectory }, null, 2)}\n`,
          mode: 0o600,
        },
      ];
  }
}

export function uninstallActions(manager: ServiceManager, host: DaemonHost): DaemonAction[] {
  switch (manager) {
    case "systemd": {
      const live = host.systemdRoot === "/";
      return [
        ...(live ? [{ action: "run" as const, command: systemctl(host, `stop ${UNIT_NAME}`) }] : []),
        { action: "run", command: systemctl(host, `disable ${UNIT_NAME}`) },
        { action: "remove", path: unitPath(host) },
        ...(live ? [{ action: "run" as const, command: systemctl(host, "daemon-reload") }] : []),
      ];
    }
    case "windows": {
      const scripts = windowsScripts(host);
      return [
        { action: "run", command: `sc.exe stop ${WINDOWS_SERVICE}` },
        { action: "run", command: `sc.exe delete ${WINDOWS_SERVICE}` },
        ...WINDOWS_TASKS.map((task) => ({ action: "run" as const, command: `schtasks.exe /Delete /F /TN "${task}"` })),
        { action: "remove", path: scripts.service },
        { action: "remove", path: scripts.watchdog },
      ];
    }
    case "process":
      return [{ action: "remove", path: processDefinitionPath(host) }];
  }
}

/** The definition whose presence means "installed". */
export function definitionPath(manager: ServiceManager, host: DaemonHost): string {
  if (manager === "systemd") return unitPath(host);
  if (manager === "windows") return windowsScripts(host).service;
  return processDefinitionPath(host);
}
