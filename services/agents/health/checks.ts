// The five checks of the agent gateway's health report. Each says what it saw in `data` (never a
// password, key or token) and fails to its documented status: gateway, providers, disk_space and
// memory to Degraded, session_store to Unhealthy.
import { statfs } from "node:fs/promises";
import { dirname } from "node:path";
import { performance } from "node:perf_hooks";
import type { Database } from "../../runtime/database/index.js";
import { formatTimeSpan } from "./time-span.js";

export type HealthStatusName = "Healthy" | "Degraded" | "Unhealthy";

export interface CheckResult {
  status: HealthStatusName;
  description: string;
  duration: string;
  tags: string[];
  data: Record<string, unknown>;
}

/** A provider as the pool lists it. */
export interface ProviderAvailability {
  name: string;
  available: boolean;
}

export interface HealthSources {
  /** Agents running on every instance (rows of agents_agent). */
  activeAgents(): Promise<number> | number;
  /** The provider pool's list(). */
  providers(): Promise<readonly ProviderAvailability[]> | readonly ProviderAvailability[];
  db: Pick<Database, "em">;
  /** Where sessions are kept, as shown: the embedded directory or the URL without its password. */
  dbPath: string;
  /** The directory whose free space is checked (AgentGateway:DataDir). */
  dataDir: string;
  minFreeDiskBytes: number;
  maxHeapBytes: number;
  /** Process start, for the uptime (performance.now() time origin by default). */
  startedAt?: number;
}

async function timed(tags: string[], run: () => Promise<Omit<CheckResult, "duration" | "tags">>): Promise<CheckResult> {
  const started = performance.now();
  const result = await run();
  return { ...result, tags, duration: formatTimeSpan(performance.now() - started) };
}

export function gatewayCheck(sources: HealthSources): Promise<CheckResult> {
  return timed([], async () => {
    const uptime = formatTimeSpan(performance.now() - (sources.startedAt ?? 0));
    try {
      const activeAgents = await sources.activeAgents();
      return { status: "Healthy", description: "Gateway is operational.", data: { activeAgents, uptime } };
    } catch {
      return { status: "Degraded", description: "Gateway service is not operational.", data: { activeAgents: 0, uptime } };
    }
  });
}

export function providersCheck(sources: HealthSources): Promise<CheckResult> {
  return timed(["providers"], async () => {
    let list: readonly ProviderAvailability[] = [];
    try {
      list = await sources.providers();
    } catch {
      list = [];
    }
    const available = list.filter((p) => p.available).map((p) => p.name);
    const unavailable = list.filter((p) => !p.available).map((p) => p.name);
    const data = { available, unavailable, availableCount: available.length, totalCount: list.length };
    return available.length > 0
      ? { status: "Healthy", description: `${available.length} of ${list.length} AI providers reachable.`, data }
      : { status: "Degraded", description: "No AI provider is reachable.", data };
  });
}

export function sessionStoreCheck(sources: HealthSources): Promise<CheckResult> {
  return timed(["storage"], async () => {
    try {
      const rows = await sources.db
        .em()
        .getConnection()
        .execute<{ count: string | number }[]>(`select count(*) as "count" from "agents_session"`);
      const sessionCount = Number(rows[0]?.count ?? 0);
      return { status: "Healthy", description: "Session store is accessible.", data: { sessionCount, dbPath: sources.dbPath } };
    } catch {
      // A missing table and an unreachable database alike: sessions cannot be kept.
      return { status: "Unhealthy", description: "Session store is inaccessible.", data: { sessionCount: 0, dbPath: sources.dbPath } };
    }
  });
}

/** Free space of the directory, or of its nearest existing parent (it may not be created yet). */
async function freeBytesOf(path: string): Promise<number> {
  let current = path;
  for (;;) {
    try {
      const stats = await statfs(current);
      return Number(stats.bavail) * Number(stats.bsize);
    } catch (err) {
      const parent = dirname(current);
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || parent === current) throw err;
      current = parent;
    }
  }
}

export function diskSpaceCheck(sources: HealthSources): Promise<CheckResult> {
  return timed(["storage"], async () => {
    const thresholdBytes = sources.minFreeDiskBytes;
    try {
      const freeBytes = await freeBytesOf(sources.dataDir);
      const data = { path: sources.dataDir, freeBytes, thresholdBytes };
      return freeBytes < thresholdBytes
        ? { status: "Degraded", description: `Less than ${Math.round(thresholdBytes / 1048576)} MB free in the data directory.`, data }
        : { status: "Healthy", description: "Enough free disk space in the data directory.", data };
    } catch {
      return {
        status: "Degraded",
        description: "The free space of the data directory cannot be read.",
        data: { path: sources.dataDir, freeBytes: 0, thresholdBytes },
      };
    }
  });
}

export function memoryCheck(sources: HealthSources): Promise<CheckResult> {
  return timed(["memory"], async () => {
    const heapUsedBytes = process.memoryUsage().heapUsed;
    const thresholdBytes = sources.maxHeapBytes;
    const data = { heapUsedBytes, thresholdBytes };
    return heapUsedBytes > thresholdBytes
      ? { status: "Degraded", description: `Heap above ${Math.round(thresholdBytes / 1048576)} MB.`, data }
      : { status: "Healthy", description: "Heap within its threshold.", data };
  });
}
