// The process manager (Daemon:ServiceManager=process: containers, hosts without a service
// manager). `app-daemon start` launches this supervisor detached; it runs `app-daemon run` with the
// caller's environment plus `~/.app/daemon.env`, writes its output to `~/.app/logs/daemon.log`
// (rotated at 10 MiB, five files kept), and starts it again 5 s after an abnormal exit (any code
// but 0 and 2). SIGTERM to the supervisor stops the daemon (SIGTERM, then SIGKILL after the drain
// timeout + 15 s) and ends the supervisor. Its pid is in `~/.app/daemon/supervisor.pid`.
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync, readFileSync, renameSync, statSync, type WriteStream } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const LOG_LIMIT_BYTES = 10 * 1024 * 1024;
export const LOG_FILES = 5;
export const RESTART_DELAY_MS = 5_000;

export interface SupervisorPaths {
  dataDir: string;
}

export const logPath = (dataDir: string) => join(dataDir, "logs", "daemon.log");
export const supervisorPidPath = (dataDir: string) => join(dataDir, "daemon", "supervisor.pid");

/** `KEY=value` lines of `~/.app/daemon.env` (comments and blank lines skipped, quotes removed). */
export function readEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const out: Record<string, string> = {};
  for (const raw of readFileSync(path, "utf8").split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const value = line.slice(eq + 1).trim();
    out[line.slice(0, eq).trim()] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return out;
}

/** A log file that rotates itself: daemon.log, daemon.log.1 … daemon.log.4. */
export class RotatingLog {
  private stream: WriteStream;
  private size: number;

  constructor(private readonly path: string) {
    this.size = existsSync(path) ? statSync(path).size : 0;
    this.stream = createWriteStream(path, { flags: "a", mode: 0o600 });
  }

  write(chunk: Buffer): void {
    if (this.size + chunk.length > LOG_LIMIT_BYTES && this.size > 0) this.rotate();
    this.stream.write(chunk);
    this.size += chunk.length;
  }

  private rotate(): void {
    this.stream.end();
    for (let i = LOG_FILES - 1; i >= 1; i--) {
      const from = i === 1 ? this.path : `${this.path}.${i - 1}`;
      if (existsSync(from)) renameSync(from, `${this.path}.${i}`);
    }
    this.stream = createWriteStream(this.path, { flags: "a", mode: 0o600 });
    this.size = 0;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.stream.end(resolve));
  }
}

export interface SuperviseOptions {
  node: string;
  script: string;
  /** What follows `app-daemon` for the daemon: `run` and its flags. */
  args: string[];
  dataDir: string;
  stopTimeoutMs: number;
  env: NodeJS.ProcessEnv;
}

/** Runs the daemon until SIGTERM; resolves when the supervisor should exit. */
export async function supervise(options: SuperviseOptions): Promise<void> {
  await mkdir(join(options.dataDir, "logs"), { recursive: true, mode: 0o700 });
  await mkdir(join(options.dataDir, "daemon"), { recursive: true, mode: 0o700 });
  await writeFile(supervisorPidPath(options.dataDir), `${process.pid}\n`, { mode: 0o600 });
  const log = new RotatingLog(logPath(options.dataDir));
  const note = (text: string) => log.write(Buffer.from(`${JSON.stringify({ time: new Date().toISOString(), supervisor: text })}\n`));
  let child: ChildProcess | undefined;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });

  const launch = () => {
    const env = { ...options.env, ...readEnvFile(join(options.dataDir, "daemon.env")) };
    child = spawn(options.node, [options.script, ...options.args], { env, stdio: ["ignore", "pipe", "pipe"] });
    note(`started app-daemon run (pid ${child.pid})`);
    child.stdout!.on("data", (chunk: Buffer) => log.write(chunk));
    child.stderr!.on("data", (chunk: Buffer) => log.write(chunk));
    child.once("exit", (code, signal) => {
      child = undefined;
      note(`app-daemon run exited (${signal ?? `code ${code}`})`);
      if (stopping) return void log.close().then(done);
      if (code === 0 || code === 2) {
        note(code === 2 ? "not restarted: a configuration error (exit 2)" : "not restarted: a clean exit");
        return void log.close().then(done);
      }
      note(`restarting in ${RESTART_DELAY_MS / 1000} s`);
      restartTimer = setTimeout(launch, RESTART_DELAY_MS);
    });
  };

  process.on("SIGTERM", () => {
    if (stopping) return;
    stopping = true;
    if (restartTimer) clearTimeout(restartTimer);
    if (!child) return void log.close().then(done);
    note("stopping app-daemon run");
    child.kill("SIGTERM");
    const running = child;
    setTimeout(() => running.exitCode === null && running.signalCode === null && running.kill("SIGKILL"), options.stopTimeoutMs).unref();
  });

  launch();
  await finished;
  await rm(supervisorPidPath(options.dataDir), { force: true });
}

/** The supervisor's pid when one is alive. */
export function runningSupervisor(dataDir: string): number | undefined {
  const path = supervisorPidPath(dataDir);
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
