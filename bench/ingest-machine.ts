// What the ingest figures were measured on and under: CPU model and cores, Node, load average,
// and CPU time from /proc (Linux) for the server process and the whole machine.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";

export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  /** 1, 5 and 15 minute load averages. */
  loadAverage: [number, number, number];
}

export function machine(): Machine {
  const list = cpus();
  const [one, five, fifteen] = loadavg();
  return { cpu: list[0]?.model.trim() ?? "unknown CPU", cores: list.length, node: process.version, loadAverage: [one!, five!, fifteen!] };
}

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export interface CpuSample {
  /** User + system time of the process, ms (NaN off Linux). */
  processMs: number;
  /** Busy and total ticks of all cores. */
  busy: number;
  total: number;
}

export function cpuSample(pid: number): CpuSample {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const processMs = ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1000;
    const all = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.split(/\s+/).slice(1, 9).map(Number);
    const total = all.reduce((a, b) => a + b, 0);
    return { processMs, busy: total - all[3]! - all[4]!, total };
  } catch {
    return { processMs: Number.NaN, busy: Number.NaN, total: Number.NaN };
  }
}

/** Share of all cores busy over `ms` before anything of ours runs: other work that skews figures. */
export async function backgroundBusy(ms: number): Promise<number> {
  const before = cpuSample(process.pid);
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = cpuSample(process.pid);
  return (after.busy - before.busy) / (after.total - before.total);
}

/** User + system time, ms, of each of these processes (those gone are left out). */
export function processesCpuMs(pids: readonly number[]): Map<number, number> {
  const times = new Map<number, number>();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      times.set(pid, ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1000);
    } catch {
      // exited, or not Linux
    }
  }
  return times;
}

/**
 * CPU ms the processes of `after` spent since `before`: one that started in between counts in
 * full; one that exited in between is left out (a pool closes only idle connections).
 */
export function cpuMsSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}
