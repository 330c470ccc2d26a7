// The child-process runner of every process tool (run_command, exec, git, execute_code, the
// runners, jobs). A child runs in its own process group (detached), in a working directory the
// caller resolved through the jail, with only PATH, HOME, LANG, TERM, TMPDIR, USER,
// `Tools:Shell:PassEnv` and the caller's own variables. On timeout or abort the whole group is
// killed; when the main process exits, whatever it left running in its group is killed too. Output
// (stdout and stderr interleaved) is capped at `Tools:MaxOutputChars`.
import { type ChildProcess, spawn } from "node:child_process";
import type { ToolSettings } from "../tool.js";
import { OutputBuffer } from "./output.js";

/** Every run_command-like tool answers this record. */
export interface RunResult {
  /** The exit code; 128 + the signal number when a signal ended it (137 after a kill on timeout). */
  exitCode: number;
  output: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

const BASE_ENV = ["PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"];

/** The environment of a child: the base variables, `Tools:Shell:PassEnv`, then `extra`. */
export function childEnv(settings: ToolSettings, extra: Record<string, string> = {}): Record<string, string> {
  const passEnv = ((settings.shell as { passEnv?: string[] } | undefined)?.passEnv ?? []) as string[];
  const env: Record<string, string> = {};
  for (const name of [...BASE_ENV, ...passEnv]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

export interface SpawnOptions {
  /** Absolute, already resolved through the jail (or a fresh temporary directory). */
  cwd: string;
  env: Record<string, string>;
  maxChars: number;
  /** The output kept: the first characters (default) or the last ones (exec sessions). */
  keep?: "head" | "tail";
  /** 0 or undefined: no timeout. */
  timeoutMs?: number;
  /** Written to stdin, which is then closed; without it stdin stays open only when `interactive`. */
  input?: string;
  interactive?: boolean;
  /** Does not keep the Node.js process alive (a long-lived helper such as a notebook kernel). */
  unref?: boolean;
  /** Also hands each stdout chunk to the caller (a driver speaking a protocol on stdout). */
  onStdout?: (chunk: string) => void;
}

/** A running child: its output so far, and a promise of the result. */
export class Child {
  readonly output: OutputBuffer;
  readonly startedAt = Date.now();
  readonly done: Promise<RunResult>;
  result?: RunResult;
  timedOut = false;
  killed = false;
  private readonly process: ChildProcess;
  private timer?: NodeJS.Timeout;

  constructor(file: string, args: readonly string[], options: SpawnOptions) {
    this.output = new OutputBuffer(options.maxChars, options.keep ?? "head");
    const interactive = options.interactive === true;
    this.process = spawn(file, [...args], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: [interactive || options.input !== undefined ? "pipe" : "ignore", "pipe", "pipe"],
    });
    for (const stream of [this.process.stdout, this.process.stderr]) {
      stream?.setEncoding("utf8");
      stream?.on("data", (chunk: string) => this.output.append(chunk));
    }
    if (options.onStdout) this.process.stdout?.on("data", options.onStdout);
    if (options.unref) {
      this.process.unref();
      for (const stream of [this.process.stdin, this.process.stdout, this.process.stderr])
        (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
    if (options.input !== undefined) this.process.stdin?.end(options.input);
    this.process.stdin?.on("error", () => {});
    if (options.timeoutMs && options.timeoutMs > 0) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.killGroup("SIGKILL");
      }, options.timeoutMs);
    }
    this.done = new Promise<RunResult>((resolve) => {
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      const finish = () => {
        if (this.result) return;
        clearTimeout(this.timer);
        const { code, signal } = exit ?? { code: null, signal: "SIGKILL" as NodeJS.Signals };
        this.result = {
          exitCode: code ?? 128 + signalNumber(signal),
          output: this.output.output,
          timedOut: this.timedOut,
          truncated: this.output.truncated,
          durationMs: Date.now() - this.startedAt,
        };
        resolve(this.result);
      };
      this.process.on("error", (error) => {
        this.output.append(`${error.message}\n`);
        exit = { code: 127, signal: null };
        finish();
      });
      this.process.on("exit", (code, signal) => {
        exit = { code, signal };
        // What the main process left running in its group may hold the pipes open: once the
        // pipes stay open a moment after the exit, end the group (its output is still read to
        // the end on close). A holder that left the group is not waited for past a few seconds.
        setTimeout(() => {
          if (this.result) return;
          this.killGroup("SIGKILL");
          setTimeout(() => {
            this.process.stdout?.destroy();
            this.process.stderr?.destroy();
            finish();
          }, 5000).unref();
        }, 200).unref();
      });
      this.process.on("close", () => finish());
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get running(): boolean {
    return this.result === undefined;
  }

  /** Writes to stdin (interactive children); false when stdin is closed. */
  write(input: string): boolean {
    const stdin = this.process.stdin;
    if (!stdin || stdin.destroyed || !stdin.writable) return false;
    stdin.write(input);
    return true;
  }

  /** Kills the child's whole process group. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.killed = true;
    this.killGroup(signal);
  }

  private killGroup(signal: NodeJS.Signals): void {
    const pid = this.process.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is gone already.
    }
  }
}

/** Runs a child to its end (or its timeout, or `signal`), and answers the RunResult record. */
export async function runChild(
  file: string,
  args: readonly string[],
  options: SpawnOptions & { signal?: AbortSignal },
): Promise<RunResult> {
  const child = new Child(file, args, options);
  const onAbort = () => {
    child.timedOut = true;
    child.kill();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  try {
    return await child.done;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * bash's arguments for a shell line. `--norc`: bash runs ~/.bashrc for `-c` when its stdin is a
 * socket (it takes the caller for rshd), and a child's piped stdin is a socket pair; a tool's line
 * must not run the host user's startup files (a version manager's init there can stall it for a
 * minute).
 */
export function bashArgs(command: string): string[] {
  return ["--norc", "-c", command];
}

/** A shell line through bash (the shell rules are checked by the caller first). */
export function runShell(command: string, options: SpawnOptions & { signal?: AbortSignal }): Promise<RunResult> {
  return runChild("bash", bashArgs(command), options);
}

/** The timeout of a call: the envelope's timeoutMs, else the tool's own seconds. */
export function timeoutOf(ctx: { timeoutMs?: number }, seconds: number): number {
  return ctx.timeoutMs !== undefined && ctx.timeoutMs > 0 ? ctx.timeoutMs : seconds * 1000;
}

const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? (SIGNALS[signal] ?? 9) : 0;
}
