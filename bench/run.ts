// `npm run bench [-- --quick]`: reads one asset three ways on a fresh PostgreSQL database — through
// the REST gateway, with a Connect client straight to the service host, and through a hand-written
// node:http + pg handler — and prints throughput, latency and the targets. A benchmark, not a test.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { cpus } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { AssetService } from "../gen/tracking/v1/asset_pb.js";
// Straight from its file: the database index would load MikroORM into the load generator.
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { backgroundLoad, cpuSnapshot, cpuUsage, type CpuUsage } from "./cpu.js";
import { closedLoop, httpLoad, type LoadOptions, type LoadResult } from "./load.js";
import type { ReadyMessage } from "./servers.js";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const CONNECTIONS = 16;
const START_TIMEOUT_MS = 60_000;
const TARGET_RPS_RATIO = 0.6;
const TARGET_P50_GAP_MS = 0.5;
// Whole run, retries of noisy cases included, stays under two minutes.
const RUN_BUDGET_MS = 110_000;
// More than this share of the machine taken by other processes makes a case worth measuring again.
const NOISY_SHARE = 0.1;

interface Plan {
  readonly loaded: LoadOptions;
  readonly single: LoadOptions;
}

const plans: Record<"full" | "quick", Plan> = {
  full: {
    loaded: { connections: CONNECTIONS, warmupMs: 3_000, durationMs: 10_000 },
    single: { connections: 1, warmupMs: 1_000, durationMs: 5_000 },
  },
  quick: {
    loaded: { connections: CONNECTIONS, warmupMs: 1_000, durationMs: 2_000 },
    single: { connections: 1, warmupMs: 500, durationMs: 1_500 },
  },
};

type CaseName = "gateway" | "connect" | "raw";

const caseLabels: Record<CaseName, string> = {
  gateway: "(a) REST gateway, all-in-one mesh (HTTP/1.1)",
  connect: "(b) Connect client → service host (gRPC, HTTP/2)",
  raw: "(c) hand-written node:http + pg (HTTP/1.1)",
};

interface Measured {
  readonly load: LoadResult;
  readonly cpu: CpuUsage;
}

interface Servers {
  readonly mesh: ChildProcess;
  readonly raw: ChildProcess;
  readonly gatewayUrl: string;
  readonly serviceUrl: string;
  readonly rawUrl: string;
}

async function main(): Promise<void> {
  const plan = plans[process.argv.includes("--quick") ? "quick" : "full"];
  const baseUrl = process.env.DATABASE_URL || LOCAL_POSTGRES;
  const started = Date.now();
  const children: ChildProcess[] = [];
  let database: TestDatabase | undefined;
  const cleanUp = async (): Promise<void> => {
    await Promise.all(children.map(stopChild));
    await database?.drop();
  };
  // Ctrl-C still drops the throwaway database.
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));

  try {
    // Figures from a busy machine (a test suite, a build) mean little; say so next to them.
    const background = await backgroundLoad(1_000);
    database = await createTestDatabaseUrl(baseUrl);
    const servers = await startServers(database.url, children);
    const assetId = await seedAsset(servers.gatewayUrl);
    const grpc = createClient(AssetService, createGrpcTransport({ baseUrl: servers.serviceUrl }));
    await checkSameAnswer(servers, assetId, () => grpc.getAsset({ id: assetId }));

    const gatewayTarget = `${servers.gatewayUrl}/api/assets/${assetId}`;
    const rawTarget = `${servers.rawUrl}/api/assets/${assetId}`;
    const measure = async (name: CaseName, options: LoadOptions): Promise<Measured> => {
      const child = name === "raw" ? servers.raw : servers.mesh;
      // Warm-up runs inside the load functions; CPU is counted over the measured window only.
      let before = cpuSnapshot(child.pid!);
      const onMeasureStart = (): void => {
        before = cpuSnapshot(child.pid!);
      };
      const load =
        name === "connect"
          ? await closedLoop(() => grpc.getAsset({ id: assetId }), options, onMeasureStart)
          : await httpLoad(name === "gateway" ? gatewayTarget : rawTarget, options, onMeasureStart);
      return { load, cpu: cpuUsage(before, cpuSnapshot(child.pid!), load.requests) };
    };

    // On a shared machine a build or a test run can land in the middle of a case: such a case is
    // measured again while the time budget allows, and the cleanest attempt is kept.
    const deadline = started + RUN_BUDGET_MS;
    const caseMs = (options: LoadOptions): number => options.warmupMs + options.durationMs + 500;
    let plannedMs = 3 * (caseMs(plan.loaded) + caseMs(plan.single));
    const measureQuietly = async (name: CaseName, options: LoadOptions): Promise<Measured> => {
      let best = await measure(name, options);
      plannedMs -= caseMs(options);
      // One more attempt at most, and only if the cases still to come keep within the budget.
      if (best.cpu.others > NOISY_SHARE && Date.now() + caseMs(options) + plannedMs < deadline) {
        process.stderr.write(`bench: other processes took ${(best.cpu.others * 100).toFixed(0)}% during ${name}; measuring it again\n`);
        const again = await measure(name, options);
        if (!(again.cpu.others >= best.cpu.others)) best = again;
      }
      return best;
    };
    const order: CaseName[] = ["raw", "gateway", "connect"];
    const loaded = new Map<CaseName, Measured>();
    const single = new Map<CaseName, Measured>();
    for (const name of order) loaded.set(name, await measureQuietly(name, plan.loaded));
    for (const name of order) single.set(name, await measureQuietly(name, plan.single));

    const postgres = await postgresVersion(baseUrl);
    printReport({ plan, loaded, single, postgres, background, seconds: (Date.now() - started) / 1000 });
  } finally {
    await cleanUp();
  }
}

async function startServers(databaseUrl: string, children: ChildProcess[]): Promise<Servers> {
  const mesh = startChild("mesh", databaseUrl, children);
  const raw = startChild("raw", databaseUrl, children);
  const [meshReady, rawReady] = await Promise.all([mesh.ready, raw.ready]);
  if (meshReady.role !== "mesh" || rawReady.role !== "raw") throw new Error("bench servers answered with the wrong role");
  return {
    mesh: mesh.child,
    raw: raw.child,
    gatewayUrl: meshReady.gatewayUrl,
    serviceUrl: meshReady.serviceUrl,
    rawUrl: rawReady.url,
  };
}

function startChild(
  role: "mesh" | "raw",
  databaseUrl: string,
  children: ChildProcess[],
): { child: ChildProcess; ready: Promise<ReadyMessage["benchReady"]> } {
  const script = fileURLToPath(new URL("./servers.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", ...profileFlags(role), script, role, databaseUrl], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  const ready = new Promise<ReadyMessage["benchReady"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} server did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`${role} server exited early (code ${code})`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith('{"benchReady"')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as ReadyMessage).benchReady);
      } else {
        // The servers' own warnings and errors stay visible.
        process.stderr.write(`[${role}] ${line}\n`);
      }
    });
  });
  return { child, ready };
}

// BENCH_CPU_PROF=mesh|raw writes a V8 CPU profile of that server into bench/profiles/.
function profileFlags(role: string): string[] {
  if (process.env.BENCH_CPU_PROF !== role) return [];
  const dir = fileURLToPath(new URL("./profiles/", import.meta.url));
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`];
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

async function seedAsset(gatewayUrl: string): Promise<string> {
  const res = await fetch(`${gatewayUrl}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Van 7", description: "Benchmark asset", category: "vehicle", speedThresholdKmh: 90 }),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`seeding the asset answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** The three cases must read the same thing, or the comparison means nothing. */
async function checkSameAnswer(servers: Servers, id: string, viaConnect: () => Promise<{ id: string }>): Promise<void> {
  const read = async (base: string): Promise<unknown> => {
    const res = await fetch(`${base}/api/assets/${id}`, { signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`${base} answered ${res.status}`);
    return await res.json();
  };
  const [gateway, raw, connect] = await Promise.all([read(servers.gatewayUrl), read(servers.rawUrl), viaConnect()]);
  if (JSON.stringify(gateway) !== JSON.stringify(raw)) {
    throw new Error(`the gateway and the hand-written handler disagree:\n${JSON.stringify(gateway)}\n${JSON.stringify(raw)}`);
  }
  if (connect.id !== id) throw new Error("the Connect client read another asset");
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>("show server_version");
    return rows[0]?.server_version ?? "unknown";
  } finally {
    await client.end();
  }
}

interface Report {
  plan: Plan;
  loaded: Map<CaseName, Measured>;
  single: Map<CaseName, Measured>;
  postgres: string;
  background: number;
  seconds: number;
}

function printReport({ plan, loaded, single, postgres, background, seconds }: Report): void {
  const out: string[] = [];
  const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(3) : "-");
  const percent = (v: number): string => (Number.isFinite(v) ? `${(v * 100).toFixed(0)}%` : "-");
  const row = (name: CaseName, m: Measured): string =>
    [
      caseLabels[name].padEnd(52),
      m.load.rps.toFixed(0).padStart(8),
      ms(m.load.p50).padStart(9),
      ms(m.load.p99).padStart(9),
      (Number.isFinite(m.cpu.serverUsPerRequest) ? m.cpu.serverUsPerRequest.toFixed(0) : "-").padStart(12),
      percent(m.cpu.machineBusy).padStart(9),
      percent(m.cpu.others).padStart(7),
      String(m.load.errors).padStart(7),
    ].join(" ");
  const header = [
    "case".padEnd(52),
    "req/s".padStart(8),
    "p50 ms".padStart(9),
    "p99 ms".padStart(9),
    "server µs/req".padStart(12),
    "all CPUs".padStart(9),
    "others".padStart(7),
    "errors".padStart(7),
  ].join(" ");
  const section = (title: string, options: LoadOptions, results: Map<CaseName, Measured>): void => {
    out.push(
      "",
      `${title}: ${options.connections} connection(s), ${options.warmupMs / 1000} s warm-up, ${options.durationMs / 1000} s measured`,
    );
    out.push(header);
    for (const [name, m] of results) out.push(row(name, m));
  };

  const cpu = cpus();
  out.push("Meshwork benchmark: GET one asset (tracking.v1.AssetService/GetAsset), loopback only");
  out.push(`machine: ${cpu[0]?.model.trim() ?? "unknown CPU"}, ${cpu.length} cores; Node ${process.version}; PostgreSQL ${postgres}`);
  const busy = Number.isFinite(background) ? `${(background * 100).toFixed(0)}%` : "unknown";
  out.push(`CPU busy before the run (other processes): ${busy}${background > 0.15 ? " — NOT quiet, figures are skewed" : ""}`);
  section("throughput", plan.loaded, loaded);
  section("latency", plan.single, single);

  const rpsRatio = loaded.get("gateway")!.load.rps / loaded.get("raw")!.load.rps;
  const p50Gap = single.get("gateway")!.load.p50 - single.get("connect")!.load.p50;
  const verdict = (met: boolean): string => (met ? "met" : "NOT met");
  out.push("", "targets:");
  out.push(
    `  gateway req/s ÷ hand-written req/s at ${plan.loaded.connections} connections = ${rpsRatio.toFixed(2)} (target ≥ ${TARGET_RPS_RATIO}): ${verdict(rpsRatio >= TARGET_RPS_RATIO)}`,
  );
  out.push(
    `  gateway p50 − direct Connect p50 at 1 connection = ${p50Gap.toFixed(3)} ms (target ≤ ${TARGET_P50_GAP_MS} ms): ${verdict(p50Gap <= TARGET_P50_GAP_MS)}`,
  );
  const noisy = [...loaded.values(), ...single.values()].some((m) => m.cpu.others > NOISY_SHARE);
  out.push(
    "",
    "server µs/req: CPU time of the server process per request. all CPUs: busy share of both cores (server, load",
    "generator, PostgreSQL and the rest); others: the share taken by processes outside the benchmark.",
  );
  if (noisy) out.push("WARNING: other processes took more than 10% of the machine during a measurement; rerun on a quiet machine.");
  out.push(`Run took ${seconds.toFixed(0)} s.`);
  process.stdout.write(`${out.join("\n")}\n`);
}

await main();
