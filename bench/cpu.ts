// CPU accounting from /proc (Linux): what the server, the load generator, PostgreSQL and everything
// else spent in a measured window, so figures from a small, shared machine can be trusted or not.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface CpuSnapshot {
  /** User+system time in ms, NaN when /proc is unavailable. */
  readonly serverMs: number;
  readonly loadMs: number;
  /** Per PostgreSQL process: backends come and go (idle pool connections close). */
  readonly postgresMs: ReadonlyMap<string, number>;
  /** Time all cores spent running processes (user, nice, system) or stolen by the hypervisor, ms. */
  readonly machineProcessMs: number;
  /** Busy time over all cores, interrupts included, ms. */
  readonly machineBusyMs: number;
  /** Wall time over all cores (busy + idle), ms. */
  readonly machineTotalMs: number;
}

export interface CpuUsage {
  /** Server CPU time per completed request, microseconds. */
  readonly serverUsPerRequest: number;
  /** Share of all cores busy (0..1): everything together. */
  readonly machineBusy: number;
  /** Share of all cores used by processes that are not part of the benchmark (0..1). */
  readonly others: number;
}

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const ticksToMs = (ticks: number): number => (ticks / ticksPerSecond) * 1000;

/** utime + stime of one process, in ms, and its command name. */
function processCpu(pid: number | string): { ms: number; comm: string } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const close = stat.lastIndexOf(")");
  const comm = stat.slice(stat.indexOf("(") + 1, close);
  // Fields after "pid (comm) "; utime and stime are the 14th and 15th fields of the line.
  const fields = stat.slice(close + 2).split(" ");
  return { ms: ticksToMs(Number(fields[11]) + Number(fields[12])), comm };
}

function postgresCpu(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { ms, comm } = processCpu(entry);
      if (comm === "postgres") byPid.set(entry, ms);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return byPid;
}

/** `server`: the process (or processes, summed) under test. */
export function cpuSnapshot(server: number | readonly number[]): CpuSnapshot {
  try {
    // user nice system idle iowait irq softirq steal
    const cpu = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.split(/\s+/).slice(1, 9).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu as [number, number, number, number, number, number, number, number];
    return {
      serverMs: (typeof server === "number" ? [server] : server).reduce((sum, pid) => sum + processCpu(pid).ms, 0),
      loadMs: processCpu(process.pid).ms,
      postgresMs: postgresCpu(),
      machineProcessMs: ticksToMs(user + nice + system + steal),
      machineBusyMs: ticksToMs(user + nice + system + irq + softirq + steal),
      machineTotalMs: ticksToMs(user + nice + system + idle + iowait + irq + softirq + steal),
    };
  } catch {
    // Not Linux: the columns show "-".
    return { serverMs: NaN, loadMs: NaN, postgresMs: new Map(), machineProcessMs: NaN, machineBusyMs: NaN, machineTotalMs: NaN };
  }
}

export function cpuUsage(before: CpuSnapshot, after: CpuSnapshot, requests: number): CpuUsage {
  let postgresMs = 0;
  for (const [pid, ms] of after.postgresMs) postgresMs += ms - (before.postgresMs.get(pid) ?? 0);
  const ours = after.serverMs - before.serverMs + (after.loadMs - before.loadMs) + postgresMs;
  const total = after.machineTotalMs - before.machineTotalMs;
  return {
    serverUsPerRequest: ((after.serverMs - before.serverMs) * 1000) / requests,
    machineBusy: (after.machineBusyMs - before.machineBusyMs) / total,
    // Interrupt time is left out: on loopback most of it is our own traffic.
    others: Math.max(0, after.machineProcessMs - before.machineProcessMs - ours) / total,
  };
}

/** Share of all cores busy over `ms` before anything of ours runs: other work that skews figures. */
export async function backgroundLoad(ms: number): Promise<number> {
  const before = cpuSnapshot(process.pid);
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = cpuSnapshot(process.pid);
  return (after.machineBusyMs - before.machineBusyMs) / (after.machineTotalMs - before.machineTotalMs);
}
