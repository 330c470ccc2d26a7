// `npm run bench:sse [-- --clients 1000 --rate 200 --seconds 10 --embedded]`: the live event
// stream under load. An all-in-one mesh runs in a child process (this file with --server) on real
// PostgreSQL + NATS when they answer (DATABASE_URL / NATS_URL, else 127.0.0.1), embedded
// otherwise. This process holds the clients on raw sockets, the cheapest HTTP client there is; the
// server publishes observation events straight onto the bus at a fixed rate, each stamped with
// its publish time, and a client's receive time minus that stamp is the delivery latency.
// A benchmark, not a test: it prints p50/p99 latency, delivered/expected, CPU and the machine.
// `--profile <dir>` writes a CPU profile of the server process there; `BENCH_PERF_MAP=1` starts it
// with --perf-basic-prof instead, so Linux `perf` can name its JavaScript frames.
//
// Latency is read on `--probes` clients (default 100) that read every byte as it arrives. The other
// clients read what has accumulated every 100 ms and only count: the server still writes every
// event to every client at once, but the load generator, which shares the machine with the server,
// does not pay a socket read per event per client.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { ObservationRecordedSchema } from "../gen/tracking/v1/events_pb.js";
import { startMesh } from "../services/mesh.js";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createTestDatabaseUrl } from "../test/support/test-database.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { realInfra } from "../test/support/real-infra.js";
import { subjects } from "../services/tracking/events/subjects.js";
import { cpuSample, machine } from "./ingest-machine.js";
import { reachable } from "./children.js";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const LOCAL_NATS = "nats://127.0.0.1:4222";
const TARGET = { clients: 1_000, rate: 200, p99Ms: 100 } as const;
const START_TIMEOUT_MS = 60_000;
const BULK_READ_EVERY_MS = 100;
const BULK_READ_SLICES = 10;
const MEASURED = Buffer.from('"metadata":"m:');
const DROPPED = Buffer.from("event: dropped\n");
const FRAME_END = Buffer.from("\n\n");

const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Server role: a mesh, and a publisher driven by commands on stdin.

interface PublishCommand {
  rate: number;
  warmupMs: number;
  durationMs: number;
}

async function serve(databaseUrl: string | undefined, natsUrl: string | undefined): Promise<void> {
  // Embedded PostgreSQL lives here; a real server ignores it.
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-bench-sse-"));
  const flags = [
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Logging:Level=warn",
    `--Data:Dir=${dataDir}`,
    ...(databaseUrl ? [`--Database:Url=${databaseUrl}`] : []),
    ...(natsUrl ? [`--Nats:Url=${natsUrl}`] : []),
  ];
  const config = loadMeshConfig({ env: {}, flags, cwd: process.cwd() });
  const logger = createLogger({ level: config.runtime.logging.level });
  const mesh = await startMesh({ config, logger, mode: { kind: "all" } });
  const bus = mesh.bus!;
  const gateway = mesh.fronts.find((f) => f.name === "tracking")!.url;
  process.stdout.write(`${JSON.stringify({ sseReady: { gateway, bus: bus.kind, database: mesh.db?.mode } })}\n`);

  const deviceId = randomUUID();
  const publish = async (marker: "w" | "m"): Promise<void> => {
    const eventId = randomUUID();
    const message = create(ObservationRecordedSchema, {
      eventId,
      occurredAt: timestampNow(),
      observation: {
        id: randomUUID(),
        deviceId,
        observedAt: timestampNow(),
        latitude: 52.52 + Math.random() / 100,
        longitude: 13.405 + Math.random() / 100,
        speedKmh: 42,
        headingDegrees: 90,
        source: "bench",
        receivedAt: timestampNow(),
        // Stamped last, just before the publish: the latency clock starts here.
        metadata: `${marker}:${now().toFixed(3)}`,
      },
    });
    await bus.publish(subjects.observationRecorded, toBinary(ObservationRecordedSchema, message), { id: eventId });
  };

  const run = async ({ rate, warmupMs, durationMs }: PublishCommand) => {
    const interval = 1000 / rate;
    const start = now();
    const total = Math.round(((warmupMs + durationMs) / 1000) * rate);
    const warmupCount = Math.round((warmupMs / 1000) * rate);
    const inFlight: Promise<void>[] = [];
    let sent = 0;
    // Publishes what is due, then sleeps until the next one: the rate holds even when a timer is late.
    while (sent < total) {
      const due = Math.min(total, Math.floor((now() - start) / interval) + 1);
      for (; sent < due; sent++) inFlight.push(publish(sent < warmupCount ? "w" : "m"));
      await new Promise((r) => setTimeout(r, Math.max(0, start + sent * interval - now())));
    }
    await Promise.all(inFlight);
    process.stdout.write(`${JSON.stringify({ published: { warmup: warmupCount, measured: total - warmupCount } })}\n`);
  };

  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const command = JSON.parse(line) as { publish?: PublishCommand };
    if (command.publish) void run(command.publish);
  });
  const shutdown = () =>
    void mesh.close().then(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  lines.on("close", shutdown);
  process.on("SIGTERM", shutdown);
}

// ---------------------------------------------------------------------------------------------
// Load generator role.

interface Client {
  socket: Socket;
  probe: boolean;
  connected: boolean;
  status: number;
  rest: Buffer | undefined;
  measured: number;
  dropped: number;
}

interface Options {
  clients: number;
  probes: number;
  rate: number;
  seconds: number;
  warmupSeconds: number;
  embedded: boolean;
  /** Writes a CPU profile of the server process into this directory. */
  profileDir: string | undefined;
}

function parseOptions(argv: string[]): Options {
  const value = (name: string, fallback: number) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  return {
    clients: value("clients", TARGET.clients),
    probes: value("probes", 100),
    rate: value("rate", TARGET.rate),
    seconds: value("seconds", 10),
    warmupSeconds: value("warmup", 2),
    embedded: argv.includes("--embedded"),
    profileDir: argv.includes("--profile") ? argv[argv.indexOf("--profile") + 1] : undefined,
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Occurrences of `needle` in `haystack`. */
function count(haystack: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) n++;
  return n;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--server") {
    await serve(argv[1] || undefined, argv[2] || undefined);
    return;
  }
  const options = parseOptions(argv);
  const infra = realInfra();
  let databaseUrl: string | undefined;
  let natsUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  if (!options.embedded) {
    const pgBase = infra.databaseUrl ?? ((await reachable(LOCAL_POSTGRES)) ? LOCAL_POSTGRES : undefined);
    natsUrl = infra.natsUrl ?? ((await reachable(LOCAL_NATS)) ? LOCAL_NATS : undefined);
    if (pgBase) {
      const created = await createTestDatabaseUrl(pgBase);
      databaseUrl = created.url;
      dropDatabase = created.drop;
    }
  }

  const script = fileURLToPath(import.meta.url);
  const profile = options.profileDir
    ? ["--cpu-prof", `--cpu-prof-dir=${options.profileDir}`]
    : process.env.BENCH_PERF_MAP
      ? ["--perf-basic-prof"]
      : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", script, "--server", databaseUrl ?? "", natsUrl ?? ""], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const nextLine = (prefix: string, timeoutMs: number) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${prefix} from the server within ${timeoutMs} ms`)), timeoutMs);
      const onLine = (line: string) => {
        if (!line.startsWith(`{"${prefix}"`)) return;
        clearTimeout(timer);
        lines.off("line", onLine);
        resolve((JSON.parse(line) as Record<string, Record<string, unknown>>)[prefix]!);
      };
      lines.on("line", onLine);
      child.once("exit", (code) => reject(new Error(`the server exited (code ${code})`)));
    });

  const clients: Client[] = [];
  try {
    const ready = await nextLine("sseReady", START_TIMEOUT_MS);
    const gateway = new URL(String(ready.gateway));
    const tokenRes = await fetch(new URL("/api/events/token", gateway), { method: "POST" });
    const { token } = (await tokenRes.json()) as { token: string };

    const latencies: number[] = [];
    const request = Buffer.from(
      `GET /api/events?token=${token} HTTP/1.1\r\nHost: ${gateway.host}\r\nAccept: text/event-stream\r\nConnection: keep-alive\r\n\r\n`,
    );
    const open = (probe: boolean) =>
      new Promise<Client>((resolve, reject) => {
        const socket = connect({ host: gateway.hostname, port: Number(gateway.port) });
        const client: Client = { socket, probe, connected: false, status: 0, rest: undefined, measured: 0, dropped: 0 };
        socket.setNoDelay(true);
        socket.once("error", reject);
        socket.on("data", (chunk: Buffer) => {
          const at = now();
          let data = client.rest ? Buffer.concat([client.rest, chunk]) : chunk;
          if (client.status === 0) {
            client.status = Number(data.toString("latin1", 9, 12));
            if (client.status !== 200) reject(new Error(`stream answered ${client.status}`));
          }
          // Only whole frames are looked at; the tail waits for the next read.
          const end = data.lastIndexOf(FRAME_END);
          if (end < 0) {
            client.rest = data;
            return;
          }
          client.rest = end + 2 < data.length ? data.subarray(end + 2) : undefined;
          data = data.subarray(0, end + 2);
          if (!client.connected && data.includes(": connected")) {
            client.connected = true;
            resolve(client);
          }
          client.dropped += count(data, DROPPED);
          if (!probe) {
            client.measured += count(data, MEASURED);
            socket.pause();
            return;
          }
          for (let i = data.indexOf(MEASURED); i >= 0; i = data.indexOf(MEASURED, i + MEASURED.length)) {
            const start = i + MEASURED.length;
            const stamp = Number(data.toString("latin1", start, data.indexOf(34, start)));
            latencies.push(at - stamp);
            client.measured++;
          }
        });
        socket.write(request);
      });

    // Connected in batches: a thousand SYNs at once only measures the accept queue.
    for (let i = 0; i < options.clients; i += 100) {
      const batch = [];
      for (let j = i; j < Math.min(options.clients, i + 100); j++) batch.push(open(j < options.probes));
      clients.push(...(await Promise.all(batch)));
    }
    // Each bulk client is read every BULK_READ_EVERY_MS, a tenth of them every tenth of that: a
    // burst of 900 socket reads at once would hold up the probes' reads, and the load generator's
    // own stall would be counted as delivery latency.
    const bulk = clients.filter((c) => !c.probe);
    let slice = 0;
    const bulkReader = setInterval(() => {
      for (let i = slice; i < bulk.length; i += BULK_READ_SLICES) if (bulk[i]!.socket.isPaused()) bulk[i]!.socket.resume();
      slice = (slice + 1) % BULK_READ_SLICES;
    }, BULK_READ_EVERY_MS / BULK_READ_SLICES);

    const cpuBefore = cpuSample(child.pid!);
    const loadBefore = cpuSample(process.pid);
    const wallBefore = now();
    child.stdin!.write(
      `${JSON.stringify({ publish: { rate: options.rate, warmupMs: options.warmupSeconds * 1000, durationMs: options.seconds * 1000 } })}\n`,
    );
    const published = (await nextLine("published", (options.warmupSeconds + options.seconds) * 1000 + 60_000)) as { measured: number };
    const expected = published.measured * clients.length;
    const delivered = () => clients.reduce((sum, c) => sum + c.measured, 0);
    // The tail: wait (bounded) for what is still on its way.
    for (let i = 0; i < 100 && delivered() < expected; i++) await new Promise((r) => setTimeout(r, 50));
    const cpuAfter = cpuSample(child.pid!);
    const loadAfter = cpuSample(process.pid);
    const wallMs = now() - wallBefore;
    clearInterval(bulkReader);

    const sorted = Float64Array.from(latencies).sort();
    const m = machine();
    const busy = (cpuAfter.busy - cpuBefore.busy) / (cpuAfter.total - cpuBefore.total);
    const report = {
      setup: {
        clients: clients.length,
        probes: Math.min(options.probes, clients.length),
        ratePerSecond: options.rate,
        measuredSeconds: options.seconds,
        database: String(ready.database),
        bus: String(ready.bus),
      },
      latencyMs: {
        p50: +percentile(sorted, 50).toFixed(2),
        p90: +percentile(sorted, 90).toFixed(2),
        p99: +percentile(sorted, 99).toFixed(2),
        max: +percentile(sorted, 100).toFixed(2),
        samples: sorted.length,
      },
      delivered: `${delivered()}/${expected} (${((delivered() / expected) * 100).toFixed(2)}%)`,
      droppedNotices: clients.reduce((sum, c) => sum + c.dropped, 0),
      cpu: {
        serverCores: +((cpuAfter.processMs - cpuBefore.processMs) / wallMs).toFixed(2),
        loadGeneratorCores: +((loadAfter.processMs - loadBefore.processMs) / wallMs).toFixed(2),
        machineBusy: `${(busy * 100).toFixed(0)}%`,
      },
      machine: { cpu: m.cpu, cores: m.cores, node: m.node, loadAverageAtEnd: m.loadAverage },
      target: `p99 < ${TARGET.p99Ms} ms with ${TARGET.clients} clients at ${TARGET.rate} events/s`,
      // Only a run at the target's scale can meet it.
      met:
        clients.length >= TARGET.clients &&
        options.rate >= TARGET.rate &&
        percentile(sorted, 99) < TARGET.p99Ms &&
        delivered() === expected,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    for (const c of clients) c.socket.destroy();
    await stop(child);
    await dropDatabase?.();
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

await main().catch((err: unknown) => {
  process.stderr.write(`bench:sse failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
