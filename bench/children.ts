// The benchmark's servers as child processes (bench/servers.ts), so the load generator never shares
// their event loop: started with a role, awaited until their ready line, stopped by closing stdin.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ReadyMessage, ServerRole } from "./servers.js";

const START_TIMEOUT_MS = 60_000;

export interface Child {
  readonly process: ChildProcess;
  readonly ready: ReadyMessage["benchReady"];
  /** Bytes the process wrote to stdout besides its ready line (logs, telemetry). */
  readonly stdoutBytes: () => number;
}

export async function startChild(role: ServerRole, args: string[], children: ChildProcess[]): Promise<Child> {
  const script = fileURLToPath(new URL("./servers.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", ...profileFlags(role), script, role, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  let stdoutBytes = 0;
  const ready = await new Promise<ReadyMessage["benchReady"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} server did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`${role} server exited early (code ${code})`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith('{"benchReady"')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as ReadyMessage).benchReady);
      } else if (role === "defaults") {
        // The shipped defaults' own output is what that case measures: counted, not shown.
        stdoutBytes += Buffer.byteLength(line) + 1;
      } else {
        // The servers' own warnings and errors stay visible.
        process.stderr.write(`[${role}] ${line}\n`);
      }
    });
  });
  return { process: child, ready, stdoutBytes: () => stdoutBytes };
}

// BENCH_CPU_PROF=<role> (mesh, defaults, tracking, gateway, raw, grpc-raw; bench:agents: mesh, fake)
// writes a V8 CPU profile of that server into bench/profiles/ when it stops.
export function profileFlags(role: string): string[] {
  if (process.env.BENCH_CPU_PROF !== role) return [];
  const dir = fileURLToPath(new URL("./profiles/", import.meta.url));
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`];
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Whether a server (NATS, say) answers a TCP connect at the URL's host and port within a second. */
export function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.setTimeout(1_000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
