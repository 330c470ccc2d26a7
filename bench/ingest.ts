// `npm run bench:ingest [-- --quick]`: how many observations per second the tracking engine takes
// in, on the real PostgreSQL (a fresh database, dropped afterwards) with the in-process bus (or
// NATS JetStream when NATS_URL is set). An all-in-one mesh runs in a child process; this process
// creates devices, then measures (a) REST ingest through the gateway and (b) the gRPC bulk path,
// with no geofences, with 10,000 active fences over the region the devices drive in (created
// through the API), and without them again (deleted through the API). A benchmark, not a test.
// Also callable: runIngestBenchmark() + formatIngestReport().
//
// A rate counts an observation once it is stored AND its events are published: after each window
// the outbox is drained, and the drain time is part of the denominator ("sustained"), so a relay
// that falls behind cannot flatter the figure.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
// Straight from its file: the database index would load MikroORM into the load generator.
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { Fleet, scatterFences, type FleetDevice } from "./ingest-fleet.js";
import { bulkIngestClient } from "./ingest-bulk-client.js";
import { bulkLoad, restLoad, type IngestLoadResult } from "./ingest-load.js";
import { backgroundBusy, cpuMsSince, cpuSample, machine, processesCpuMs, type Machine } from "./ingest-machine.js";
import type { IngestReady } from "./ingest-server.js";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const START_TIMEOUT_MS = 60_000;
const DRAIN_TIMEOUT_MS = 60_000;
export const TARGETS = { restPerSecond: 2_000, bulkPerSecond: 10_000, fenceRatio: 0.8 } as const;

export interface IngestPlan {
  devices: number;
  fences: number;
  rest: { connections: number; warmupMs: number; durationMs: number };
  bulk: { callers: number; batchSize: number; warmupMs: number; durationMs: number };
}

// REST runs 64 connections: devices post on their own, so a fleet of 1,000 keeps many requests
// open at once (16 connections left the group commit too few records to share a transaction).
export const plans: Record<"full" | "quick", IngestPlan> = {
  full: {
    devices: 1_000,
    fences: 10_000,
    rest: { connections: 64, warmupMs: 8_000, durationMs: 10_000 },
    bulk: { callers: 4, batchSize: 1_000, warmupMs: 2_000, durationMs: 10_000 },
  },
  quick: {
    devices: 200,
    fences: 10_000,
    rest: { connections: 64, warmupMs: 500, durationMs: 2_000 },
    bulk: { callers: 4, batchSize: 500, warmupMs: 500, durationMs: 2_000 },
  },
};

export type PathName = "rest" | "bulk";

export interface PhaseResult {
  path: PathName;
  fences: number;
  /** Whether the pass started with a CHECKPOINT (it needs superuser or pg_checkpoint). */
  checkpointed: boolean;
  load: IngestLoadResult;
  /** Stored observations per second of the load window. */
  acceptedPerSecond: number;
  /** Unpublished outbox events when the window closed, and how long publishing them took. */
  backlog: number;
  drainMs: number;
  /** Stored and published per second: accepted / (window + drain). The figure the targets use. */
  sustainedPerSecond: number;
  /** Server process CPU per observation, µs (window + drain). */
  serverUsPerObservation: number;
  /** CPU of this process (the load generator) per observation, µs (window + drain). */
  loadGeneratorUsPerObservation: number;
  /** CPU of the PostgreSQL backends serving this database per observation, µs (window + drain). */
  postgresUsPerObservation: number;
  /** Share of all cores busy (window + drain): load generator and PostgreSQL included. */
  machineBusy: number;
  breaches: number;
  speedAlerts: number;
}

export interface IngestReport {
  plan: IngestPlan;
  quick: boolean;
  bus: string;
  machine: Machine;
  postgres: string;
  /** Share of all cores busy during one second before the run. */
  backgroundBusy: number;
  /** Load average when the run ended. */
  loadAverageAfter: [number, number, number];
  phases: PhaseResult[];
  seconds: number;
}

export interface IngestBenchOptions {
  quick?: boolean;
  /** Base URL of the PostgreSQL server; a fresh database is created on it. */
  databaseUrl?: string;
  /** NATS with JetStream; the in-process bus when absent. */
  natsUrl?: string;
  /** Writes a V8 CPU profile of the server for each measured window (not warm-up or drain) into this directory. */
  profileDir?: string;
  /** Only these paths (default both). */
  paths?: PathName[];
  /** Skip the second pass with fences. */
  skipFences?: boolean;
  /** Progress lines (default stderr). */
  progress?: (line: string) => void;
}

export async function runIngestBenchmark(options: IngestBenchOptions = {}): Promise<IngestReport> {
  const quick = options.quick ?? false;
  const plan = plans[quick ? "quick" : "full"];
  const paths = options.paths ?? ["rest", "bulk"];
  const progress = options.progress ?? ((line: string) => process.stderr.write(`bench:ingest ${line}\n`));
  const baseUrl = options.databaseUrl ?? LOCAL_POSTGRES;
  const started = Date.now();
  const host = machine();
  const background = await backgroundBusy(1_000);

  let database: TestDatabase | undefined;
  let server: Server | undefined;
  let sql: pg.Client | undefined;
  try {
    database = await createTestDatabaseUrl(baseUrl);
    sql = new pg.Client({ connectionString: database.url });
    server = await startServer(database.url, options.natsUrl, options.profileDir, progress);
    await sql.connect();
    const postgres = (await sql.query<{ server_version: string }>("show server_version")).rows[0]?.server_version ?? "unknown";

    const devices = await createDevices(server.gatewayUrl, plan.devices);
    progress(`${devices.length} devices created`);
    // Two hours of track per device before now: far more fixes than a run sends, never in the future.
    const fleet = new Fleet(devices, Date.now() - 2 * 3_600_000);

    const phases: PhaseResult[] = [];
    const runPhases = async (fences: number) => {
      for (const path of paths) {
        phases.push(await measurePhase(path, fences, server!, sql!, fleet, plan));
        const last = phases.at(-1)!;
        progress(
          `${path}, ${fences} fences: ${last.sustainedPerSecond.toFixed(0)} obs/s sustained (${last.acceptedPerSecond.toFixed(0)} accepted/s, drain ${last.drainMs.toFixed(0)} ms)`,
        );
      }
    };
    // Every pass starts from empty observation tables, so the passes compare like for like.
    const emptyTables = async () => {
      await sql!.query(
        "truncate tracking_observation, tracking_speed_alert, tracking_geofence_breach, tracking_geofence_state, outbox_event",
      );
      await sql!.query("vacuum analyze");
    };

    // All passes run in one mesh process, the fences created and deleted through the API as users
    // do (the index follows each change): restarting between passes added a process's own speed,
    // which varies by up to a fifth from one start to the next, to the ratio. The pass without
    // fences runs before and after the one with them, so a drift over the run cancels out.
    await runPhases(0);
    if (!options.skipFences) {
      await emptyTables();
      const fenceIds = await createFences(server.gatewayUrl, plan.fences);
      await waitDrained(sql);
      progress(`${fenceIds.length} fences created`);
      await runPhases(plan.fences);
      await emptyTables(); // breaches and states first, so the deletes touch only the fences
      await deleteFences(server.gatewayUrl, fenceIds);
      await waitDrained(sql);
      await emptyTables();
      progress(`${fenceIds.length} fences deleted`);
      await runPhases(0);
    }

    return {
      plan,
      quick,
      bus: options.natsUrl ? "NATS JetStream" : "in-process bus",
      machine: host,
      postgres,
      backgroundBusy: background,
      loadAverageAfter: machine().loadAverage,
      phases,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await server?.stop().catch(() => undefined);
    await sql?.end().catch(() => undefined);
    await database?.drop();
  }
}

async function measurePhase(
  path: PathName,
  fences: number,
  server: Server,
  sql: pg.Client,
  fleet: Fleet,
  plan: IngestPlan,
): Promise<PhaseResult> {
  const client = path === "bulk" ? bulkIngestClient(server.serviceUrl) : undefined;
  const run = (durationMs: number) =>
    client
      ? bulkLoad(client, fleet, { callers: plan.bulk.callers, batchSize: plan.bulk.batchSize, durationMs })
      : restLoad(server.gatewayUrl, fleet, { connections: plan.rest.connections, durationMs });
  try {
    return await measureWindow({ path, fences, server, sql, fleet, plan }, run);
  } finally {
    client?.close();
  }
}

interface Phase {
  path: PathName;
  fences: number;
  server: Server;
  sql: pg.Client;
  fleet: Fleet;
  plan: IngestPlan;
}

async function measureWindow(phase: Phase, run: (durationMs: number) => Promise<IngestLoadResult>): Promise<PhaseResult> {
  const { path, fences, server, sql, fleet, plan } = phase;
  const warmupMs = path === "rest" ? plan.rest.warmupMs : plan.bulk.warmupMs;
  const durationMs = path === "rest" ? plan.rest.durationMs : plan.bulk.durationMs;
  if (fleet.newestClockMs + 60 * 60_000 > Date.now())
    throw new Error("the fleet's clocks came too close to now; use fewer fixes or more devices");

  // A checkpoint falls due every few hundred MB of WAL, about once per bulk pass; started here, none
  // falls inside a window, and each pass pays the same full-page writes that follow one.
  const checkpointed = await checkpoint(sql);
  if (warmupMs > 0) await run(warmupMs);
  await waitDrained(sql);
  const countsBefore = await counts(sql);
  const postgresBefore = processesCpuMs(await backendPids(sql));
  const cpuBefore = cpuSample(server.pid);
  const ownBefore = process.cpuUsage();
  if (server.profiling) process.kill(server.pid, "SIGUSR2");
  const load = await run(durationMs);
  if (server.profiling) process.kill(server.pid, "SIGUSR2");
  const drainStarted = performance.now();
  const backlog = await unpublished(sql);
  await waitDrained(sql);
  const drainMs = backlog > 0 ? performance.now() - drainStarted : 0;
  const cpuAfter = cpuSample(server.pid);
  const own = process.cpuUsage(ownBefore);
  // Listed again: the mesh's pool may have opened connections during the window.
  const postgresMs = cpuMsSince(postgresBefore, processesCpuMs(await backendPids(sql)));
  const countsAfter = await counts(sql);
  if (load.accepted === 0) throw new Error(`${path}: nothing was accepted; first failure: ${load.firstFailure ?? "none"}`);
  return {
    path,
    fences,
    checkpointed,
    load,
    acceptedPerSecond: (load.accepted / load.elapsedMs) * 1000,
    backlog,
    drainMs,
    sustainedPerSecond: (load.accepted / (load.elapsedMs + drainMs)) * 1000,
    serverUsPerObservation: ((cpuAfter.processMs - cpuBefore.processMs) * 1000) / load.accepted,
    postgresUsPerObservation: (postgresMs * 1000) / load.accepted,
    loadGeneratorUsPerObservation: (own.user + own.system) / load.accepted,
    machineBusy: (cpuAfter.busy - cpuBefore.busy) / (cpuAfter.total - cpuBefore.total),
    breaches: countsAfter.breaches - countsBefore.breaches,
    speedAlerts: countsAfter.speedAlerts - countsBefore.speedAlerts,
  };
}

async function checkpoint(sql: pg.Client): Promise<boolean> {
  try {
    await sql.query("checkpoint");
    return true;
  } catch {
    return false;
  }
}

/** The server processes of this database's connections (the mesh's pool and ours). */
async function backendPids(sql: pg.Client): Promise<number[]> {
  const { rows } = await sql.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database()");
  return rows.map((r) => r.pid);
}

async function unpublished(sql: pg.Client): Promise<number> {
  // Events, not rows: a bundle row carries many.
  const { rows } = await sql.query<{ n: number }>(
    "select coalesce(sum(coalesce(cardinality(event_ids), 1)), 0)::int as n from outbox_event where published_at is null",
  );
  return rows[0]!.n;
}

async function waitDrained(sql: pg.Client): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while ((await unpublished(sql)) > 0) {
    if (Date.now() > deadline) throw new Error(`the outbox did not drain within ${DRAIN_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function counts(sql: pg.Client): Promise<{ breaches: number; speedAlerts: number }> {
  const { rows } = await sql.query<{ b: number; s: number }>(
    "select (select count(*) from tracking_geofence_breach)::int as b, (select count(*) from tracking_speed_alert)::int as s",
  );
  return { breaches: rows[0]!.b, speedAlerts: rows[0]!.s };
}

// ---- the server child ----

interface Server {
  pid: number;
  /** SIGUSR2 starts and stops a CPU profile of the server. */
  profiling: boolean;
  gatewayUrl: string;
  serviceUrl: string;
  stop(): Promise<void>;
}

async function startServer(
  databaseUrl: string,
  natsUrl: string | undefined,
  profileDir: string | undefined,
  progress: (line: string) => void,
): Promise<Server> {
  const script = fileURLToPath(new URL("./ingest-server.ts", import.meta.url));
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const child = spawn(process.execPath, ["--import", "tsx", script, databaseUrl, ...(natsUrl ? [natsUrl] : [])], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...(profileDir ? { INGEST_PROFILE_DIR: profileDir } : {}) },
  });
  const stop = () => stopChild(child);
  try {
    const ready = await new Promise<IngestReady["ingestReady"]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the mesh did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.once("exit", (code) => reject(new Error(`the mesh exited early (code ${code})`)));
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (line.startsWith('{"ingestReady"')) {
          clearTimeout(timer);
          resolve((JSON.parse(line) as IngestReady).ingestReady);
        } else if (line.startsWith('{"ingestProfile"')) {
          progress(`CPU profile of the measured window: ${(JSON.parse(line) as { ingestProfile: string }).ingestProfile}`);
        } else progress(`[mesh] ${line}`);
      });
    });
    return { pid: child.pid!, profiling: profileDir !== undefined, ...ready, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

// ---- fixtures ----

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

/** Devices through the API, a third on a 90 km/h asset, a third on an asset with no threshold, a third without one. */
async function createDevices(gatewayUrl: string, count: number): Promise<FleetDevice[]> {
  const run = randomUUID().slice(0, 8);
  const strict = await postJson<{ id: string }>(`${gatewayUrl}/api/assets`, {
    name: "Bench van",
    category: "vehicle",
    speedThresholdKmh: 90,
  });
  const plain = await postJson<{ id: string }>(`${gatewayUrl}/api/assets`, { name: "Bench truck", category: "vehicle" });
  const devices: FleetDevice[] = new Array(count);
  await inParallel(count, async (i) => {
    const assetId = i % 3 === 0 ? strict.id : i % 3 === 1 ? plain.id : undefined;
    const body = { identifier: `bench-${run}-${i}`, label: `Bench device ${i}`, ...(assetId ? { assetId } : {}) };
    const device = await postJson<{ id: string; identifier: string }>(`${gatewayUrl}/api/devices`, body);
    devices[i] = { id: device.id, identifier: device.identifier };
  });
  return devices;
}

/** Fences through the API, 16 at a time; answers their ids. */
async function createFences(gatewayUrl: string, count: number): Promise<string[]> {
  const specs = scatterFences(count);
  const ids: string[] = new Array(count);
  await inParallel(count, async (i) => {
    const f = specs[i]!;
    ids[i] = (await postJson<{ id: string }>(`${gatewayUrl}/api/geofences`, { ...f, isActive: true })).id;
  });
  return ids;
}

async function deleteFences(gatewayUrl: string, ids: readonly string[]): Promise<void> {
  await inParallel(ids.length, async (i) => {
    const res = await fetch(`${gatewayUrl}/api/geofences/${ids[i]}`, { method: "DELETE", signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`DELETE /api/geofences/${ids[i]} answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  });
}

/** Runs task(0..count-1), 16 at a time. */
async function inParallel(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

// ---- the report ----

export function formatIngestReport(report: IngestReport): string {
  const out: string[] = [];
  const m = report.machine;
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(" ");
  out.push(
    `Meshwork ingest benchmark${report.quick ? " (--quick: a smoke run, figures are not the targets' measure)" : ""}: loopback only`,
  );
  out.push(`machine: ${m.cpu}, ${m.cores} cores; Node ${m.node}; PostgreSQL ${report.postgres}; ${report.bus}`);
  const busy = Number.isFinite(report.backgroundBusy) ? `${(report.backgroundBusy * 100).toFixed(0)}%` : "unknown";
  out.push(
    `load average before ${load(m.loadAverage)}, after ${load(report.loadAverageAfter)}; CPU busy in the second before the run: ${busy}${report.backgroundBusy > 0.15 ? " (NOT quiet: figures are skewed)" : ""}`,
  );
  const p = report.plan;
  out.push(
    `${p.devices} devices; REST: ${p.rest.connections} connections, ${p.rest.warmupMs / 1000} s warm-up, ${p.rest.durationMs / 1000} s measured; bulk: ${p.bulk.callers} callers × BatchIngestObservations of ${p.bulk.batchSize}, ${p.bulk.warmupMs / 1000} s warm-up, ${p.bulk.durationMs / 1000} s measured`,
  );
  out.push("");
  const header = [
    "path".padEnd(28),
    "fences".padStart(7),
    "obs/s".padStart(8),
    "accepted/s".padStart(11),
    "backlog".padStart(8),
    "drain ms".padStart(9),
    "server µs/obs".padStart(14),
    "PG µs/obs".padStart(10),
    "loadgen µs/obs".padStart(15),
    "all CPUs".padStart(9),
    "breaches".padStart(9),
    "speed".padStart(6),
    "failed".padStart(7),
  ];
  out.push(header.join(" "));
  const label: Record<PathName, string> = { rest: "(a) REST POST .../ingest", bulk: "(b) gRPC BatchIngest" };
  for (const r of report.phases) {
    out.push(
      [
        label[r.path].padEnd(28),
        String(r.fences).padStart(7),
        r.sustainedPerSecond.toFixed(0).padStart(8),
        r.acceptedPerSecond.toFixed(0).padStart(11),
        String(r.backlog).padStart(8),
        r.drainMs.toFixed(0).padStart(9),
        (Number.isFinite(r.serverUsPerObservation) ? r.serverUsPerObservation.toFixed(0) : "-").padStart(14),
        (Number.isFinite(r.postgresUsPerObservation) && r.postgresUsPerObservation > 0
          ? r.postgresUsPerObservation.toFixed(0)
          : "-"
        ).padStart(10),
        r.loadGeneratorUsPerObservation.toFixed(0).padStart(15),
        (Number.isFinite(r.machineBusy) ? `${(r.machineBusy * 100).toFixed(0)}%` : "-").padStart(9),
        String(r.breaches).padStart(9),
        String(r.speedAlerts).padStart(6),
        String(r.load.failed).padStart(7),
      ].join(" "),
    );
    if (r.load.firstFailure) out.push(`    first failure: ${r.load.firstFailure}`);
  }
  out.push("");
  out.push("targets (obs/s = stored and published, i.e. accepted / (window + outbox drain)):");
  const verdict = (met: boolean) => (met ? "met" : "NOT met");
  for (const path of ["rest", "bulk"] as const) {
    const without = report.phases.filter((r) => r.path === path && r.fences === 0);
    if (!without.length) continue;
    // The rate without fences: the mean of the passes before and after the one with them.
    const none = without.reduce((sum, r) => sum + r.sustainedPerSecond, 0) / without.length;
    const each =
      without.length > 1 ? ` (mean of ${without.map((r) => r.sustainedPerSecond.toFixed(0)).join(" before and ")} after the fences)` : "";
    const target = path === "rest" ? TARGETS.restPerSecond : TARGETS.bulkPerSecond;
    out.push(`  ${label[path]} without fences: ${none.toFixed(0)} obs/s${each} (target ≥ ${target}): ${verdict(none >= target)}`);
    const fenced = report.phases.find((r) => r.path === path && r.fences > 0);
    if (fenced) {
      const ratio = fenced.sustainedPerSecond / none;
      out.push(
        `  ${label[path]} with ${fenced.fences} fences: ${fenced.sustainedPerSecond.toFixed(0)} obs/s (target ≥ ${target}): ${verdict(fenced.sustainedPerSecond >= target)}; ratio with/without ${ratio.toFixed(2)} (target ≥ ${TARGETS.fenceRatio}): ${verdict(ratio >= TARGETS.fenceRatio)}`,
      );
    }
  }
  out.push("");
  out.push(
    `backlog: outbox events unpublished when the window closed; server µs/obs: CPU of the mesh process per stored observation; PG µs/obs: CPU of the PostgreSQL backends of the benchmark's database (not the WAL writer or checkpointer); loadgen µs/obs: CPU of this process; all CPUs: busy share of every core (load generator and PostgreSQL included). Every pass runs in the same mesh process and starts from emptied observation, alert, state and outbox tables; the fences are created and deleted through the API; each measurement ${report.phases.every((r) => r.checkpointed) ? "starts with a CHECKPOINT" : "could NOT start with a CHECKPOINT (no privilege), so a checkpoint inside a window may skew it"}. Run took ${report.seconds.toFixed(0)} s.`,
  );
  return out.join("\n");
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const only = argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
  const profile = argv.includes("--profile") ? (process.env.INGEST_PROFILE_DIR ?? join(tmpdir(), "meshwork-ingest-profiles")) : undefined;
  const report = await runIngestBenchmark({
    quick: argv.includes("--quick"),
    databaseUrl: process.env.DATABASE_URL || LOCAL_POSTGRES,
    natsUrl: process.env.NATS_URL || undefined,
    profileDir: profile,
    paths: only === "rest" || only === "bulk" ? [only] : undefined,
    skipFences: argv.includes("--no-fences"),
  });
  process.stdout.write(`${formatIngestReport(report)}\n`);
  if (profile) process.stdout.write(`CPU profiles of the mesh: ${profile}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Ctrl-C still drops the throwaway database (the finally blocks run on the way out).
  await main();
}
