// `npm run bench:agents`: the agent gateway (issue 14) on real PostgreSQL, against a loopback
// OpenAI-compatible fake. Three processes besides PostgreSQL (and NATS when it answers): the fake
// provider and the mesh each in a child (bench/agents-server.ts), the load generator here.
//   turns  Sequential streamed turns, one turn of one agent at a time: REST `POST
//          /api/agents/{id}/message` and the /hubs/agent hub's `StreamChat` (@microsoft/signalr),
//          each against the baseline measured in the same rounds: the same chat-completions
//          request (same streamed reply) sent from here straight to the fake. Each round runs the
//          three once, in a rotating order. Gateway overhead = p50(turn) − p50(direct); target
//          < 2 ms. Each agent takes at most TURNS_PER_AGENT turns, then is stopped and a fresh one
//          spawned (outside the timed turns), so the history a turn sends stays short.
//   hub    1,000 @microsoft/signalr clients on /hubs/events calling StreamEvents("agent.*"); the
//          mesh publishes 100 AgentTurnCompleted events/s straight onto the bus (stream AGENTS),
//          each stamped with its publish time (occurred_at, to the microsecond); receive time minus
//          the event's `timestamp` is publish → client latency. Target p99 < 100 ms.
//   reads  `GET /api/agents` with an API key (auth on, rate limit on at 1,000,000 a minute) against
//          tracking's `GET /api/assets/{id}` on the same mesh, same connections, one after the
//          other. Target ≥ 0.8×.
// `--quick` is a smoke run (short windows, 100 hub clients), not figures; `--only=turns,hub,reads`
// picks parts; BENCH_CPU_PROF=mesh (or fake) writes a V8 CPU profile of that child into bench/profiles/.
// BENCH_HUB_CLIENTS overrides the number of hub clients. A benchmark, not a test.
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { request as httpRequest, Agent as HttpAgent } from "node:http";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { createInterface, type Interface } from "node:readline";
import { fileURLToPath } from "node:url";
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import pg from "pg";
import { toolDefinitions } from "../services/agents/tools/index.js";
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { type AgentsReady, BENCH_KEYS, EVENT_AGENTS, FAKE_KEY, REPLY } from "./agents-server.js";
import { backgroundLoad, cpuSnapshot, cpuUsage, type CpuSnapshot } from "./cpu.js";
import { httpLoad, type LoadOptions, type LoadResult, percentile } from "./load.js";
import { profileFlags, reachable } from "./children.js";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const LOCAL_NATS = "nats://127.0.0.1:4222";
const START_TIMEOUT_MS = 60_000;
const quick = process.argv.includes("--quick");
const parts = ["turns", "hub", "reads"] as const;
type Part = (typeof parts)[number];
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
if (only?.some((part) => !parts.includes(part as Part))) throw new Error(`--only takes ${parts.join(",")}`);
const runs = (part: Part) => !only || only.includes(part);

const TARGET = { overheadMs: 2, hubClients: 1_000, hubRate: 100, hubP99Ms: 100, readRatio: 0.8 } as const;
const AGENTS = 4;
const TURNS_PER_AGENT = 25;
const TURN_ROUNDS = quick ? { warmup: 20, measured: 100 } : { warmup: 100, measured: 1_000 };
const HUB_CLIENTS = Number(process.env.BENCH_HUB_CLIENTS ?? (quick ? 100 : TARGET.hubClients));
const HUB_WINDOW = quick ? { warmupMs: 1_000, durationMs: 3_000 } : { warmupMs: 2_000, durationMs: 10_000 };
const READ_CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const READ_WINDOW: LoadOptions = quick
  ? { connections: READ_CONNECTIONS, warmupMs: 1_000, durationMs: 2_000 }
  : { connections: READ_CONNECTIONS, warmupMs: 3_000, durationMs: 10_000 };
const MESSAGE = "Tell me about the fox.";

const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Children

interface Server {
  process: ChildProcess;
  ready: AgentsReady;
  lines: Interface;
}

async function startServer(args: string[], env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<Server> {
  const script = fileURLToPath(new URL("./agents-server.ts", import.meta.url));
  const child = spawn(process.execPath, [...profileFlags(args[0]!), "--import", "tsx", script, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
    env,
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<AgentsReady>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    child.once("exit", (code) => reject(new Error(`${args[0]} exited early (code ${code})`)));
    lines.on("line", (line) => {
      if (line.startsWith('{"benchReady"')) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { benchReady: AgentsReady }).benchReady);
      } else if (!line.startsWith('{"published"')) {
        process.stderr.write(`[${args[0]}] ${line}\n`);
      }
    });
  });
  return { process: child, ready, lines };
}

function nextLine(server: Server, prefix: string, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${prefix} from the mesh within ${timeoutMs} ms`)), timeoutMs);
    const onLine = (line: string) => {
      if (!line.startsWith(`{"${prefix}"`)) return;
      clearTimeout(timer);
      server.lines.off("line", onLine);
      resolve((JSON.parse(line) as Record<string, Record<string, unknown>>)[prefix]!);
    };
    server.lines.on("line", onLine);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// HTTP: one keep-alive socket per target, the whole answer read before the call counts as done.

const keepAlive = new HttpAgent({ keepAlive: true, maxSockets: 1 });

function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: "POST",
        agent: keepAlive,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function api(base: string, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function spawnAgent(base: string): Promise<string> {
  const res = await api(base, "POST", "/api/agents", BENCH_KEYS.admin);
  if (res.status !== 201) throw new Error(`spawn answered ${res.status}: ${JSON.stringify(res.body)}`);
  return (res.body as { id: string }).id;
}

async function stopAgent(base: string, id: string): Promise<void> {
  const res = await api(base, "DELETE", `/api/agents/${id}`, BENCH_KEYS.admin);
  if (res.status !== 204) throw new Error(`stop answered ${res.status}: ${JSON.stringify(res.body)}`);
}

// ---------------------------------------------------------------------------------------------
// 1. Turns

interface TurnFigures {
  direct: Float64Array;
  rest: Float64Array;
  hub: Float64Array;
  meshUsPerTurn: number;
  fakeUsPerRequest: number;
  usage: ReturnType<typeof cpuUsage>;
}

async function turns(mesh: Server, fake: Server): Promise<TurnFigures> {
  const { agentsUrl } = mesh.ready as Extract<AgentsReady, { role: "mesh" }>;
  const { url: fakeUrl } = fake.ready as Extract<AgentsReady, { role: "fake" }>;
  // The pool: AGENTS agents, each replaced after TURNS_PER_AGENT turns.
  const pool = await Promise.all(Array.from({ length: AGENTS }, async () => ({ id: await spawnAgent(agentsUrl), turns: 0 })));
  let next = 0;
  const agentForTurn = async (): Promise<string> => {
    const slot = pool[next++ % AGENTS]!;
    if (slot.turns >= TURNS_PER_AGENT) {
      await stopAgent(agentsUrl, slot.id);
      slot.id = await spawnAgent(agentsUrl);
      slot.turns = 0;
    }
    slot.turns++;
    return slot.id;
  };

  const hub = new HubConnectionBuilder()
    .withUrl(`${agentsUrl}/hubs/agent?api_key=${BENCH_KEYS.operator}`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  await hub.start();

  // What the gateway sends for a fresh agent (no system prompt, no history), from here to the fake.
  const directBody = JSON.stringify({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: MESSAGE }],
    tools: toolDefinitions,
    stream: true,
    stream_options: { include_usage: true },
  });
  const expected = REPLY.join("");
  const direct = async () => {
    const res = await post(`${fakeUrl}/chat/completions`, { authorization: `Bearer ${FAKE_KEY}`, accept: "text/event-stream" }, directBody);
    if (res.status !== 200 || !res.text.endsWith("data: [DONE]\n\n")) throw new Error(`the fake answered ${res.status}`);
  };
  const restTurn = async (agentId: string) => {
    const res = await post(
      `${agentsUrl}/api/agents/${agentId}/message`,
      { "x-api-key": BENCH_KEYS.operator },
      JSON.stringify({ message: MESSAGE }),
    );
    if (res.status !== 200 || (JSON.parse(res.text) as { response: string }).response !== expected) {
      throw new Error(`the REST turn answered ${res.status}: ${res.text}`);
    }
  };
  const hubTurn = (agentId: string) =>
    new Promise<void>((resolve, reject) => {
      let end: string | undefined;
      hub.stream<{ type: string; content: string }>("StreamChat", agentId, MESSAGE).subscribe({
        next: (item) => {
          if (item.type === "end") end = item.content;
          else if (item.type === "error") reject(new Error(`StreamChat: ${item.content}`));
        },
        complete: () => (end === expected ? resolve() : reject(new Error(`StreamChat ended without the reply (${end})`))),
        error: reject,
      });
    });

  const samples = { direct: [] as number[], rest: [] as number[], hub: [] as number[] };
  const kinds = ["direct", "rest", "hub"] as const;
  let before: CpuSnapshot | undefined;
  let fakeBefore: CpuSnapshot | undefined;
  for (let round = 0; round < TURN_ROUNDS.warmup + TURN_ROUNDS.measured; round++) {
    if (round === TURN_ROUNDS.warmup) {
      before = cpuSnapshot(mesh.process.pid!);
      fakeBefore = cpuSnapshot(fake.process.pid!);
    }
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(round + k) % kinds.length]!;
      const agentId = kind === "direct" ? "" : await agentForTurn();
      const t0 = performance.now();
      await (kind === "direct" ? direct() : kind === "rest" ? restTurn(agentId) : hubTurn(agentId));
      const ms = performance.now() - t0;
      if (round >= TURN_ROUNDS.warmup) samples[kind].push(ms);
    }
  }
  const after = cpuSnapshot(mesh.process.pid!);
  const fakeAfter = cpuSnapshot(fake.process.pid!);
  await hub.stop();
  await Promise.all(pool.map((slot) => stopAgent(agentsUrl, slot.id)));
  const gatewayTurns = samples.rest.length + samples.hub.length;
  const sorted = (values: number[]) => Float64Array.from(values).sort();
  return {
    direct: sorted(samples.direct),
    rest: sorted(samples.rest),
    hub: sorted(samples.hub),
    meshUsPerTurn: cpuUsage(before!, after, gatewayTurns).serverUsPerRequest,
    // Each gateway turn is one chat request to the fake, as is each direct one.
    fakeUsPerRequest: cpuUsage(fakeBefore!, fakeAfter, gatewayTurns + samples.direct.length).serverUsPerRequest,
    usage: cpuUsage(before!, after, gatewayTurns),
  };
}

// ---------------------------------------------------------------------------------------------
// 2. The events hub

interface HubFigures {
  clients: number;
  latencies: Float64Array;
  delivered: number;
  expected: number;
  published: number;
  meshCores: number;
  loadCores: number;
  /** CPU per hub message sent (2 per event and client: the StreamItem and the ActivityEvent call), µs. */
  meshUsPerMessage: number;
  loadUsPerMessage: number;
  usage: ReturnType<typeof cpuUsage>;
}

/** Milliseconds since the epoch of an RFC 3339 time, with its fraction (to the nanosecond) kept. */
function epochMs(rfc3339: string): number {
  const dot = rfc3339.indexOf(".");
  if (dot < 0) return Date.parse(rfc3339);
  return Date.parse(`${rfc3339.slice(0, dot)}Z`) + Number(`0${rfc3339.slice(dot, -1)}`) * 1000;
}

async function eventsHub(mesh: Server): Promise<HubFigures> {
  const { agentsUrl } = mesh.ready as Extract<AgentsReady, { role: "mesh" }>;
  const latencies: number[] = [];
  let delivered = 0;
  let stopping = false;
  const connections: HubConnection[] = [];
  const open = async (): Promise<HubConnection> => {
    const connection = new HubConnectionBuilder()
      .withUrl(`${agentsUrl}/hubs/events?api_key=${BENCH_KEYS.user}`, { transport: HttpTransportType.WebSockets })
      .configureLogging(LogLevel.None)
      .build();
    // Pushed to every connection for every event; a client that keeps none still reads them.
    connection.on("ActivityEvent", () => {});
    await connection.start();
    connection.stream<{ sourceId: string; timestamp: string }>("StreamEvents", "agent.*").subscribe({
      next: (event) => {
        if (event.sourceId !== EVENT_AGENTS.measured) return;
        latencies.push(now() - epochMs(event.timestamp));
        delivered++;
      },
      complete: () => {},
      // Stopping the connections at the end cancels their streams.
      error: (err: unknown) => void (stopping || process.stderr.write(`StreamEvents failed: ${String(err)}\n`)),
    });
    return connection;
  };
  try {
    // Connected in batches: a thousand handshakes at once only measure the accept queue.
    for (let i = 0; i < HUB_CLIENTS; i += 50) {
      connections.push(...(await Promise.all(Array.from({ length: Math.min(50, HUB_CLIENTS - i) }, open))));
    }
    // The streams are open once the hub has them; a moment for the last StreamEvents to land.
    await new Promise((r) => setTimeout(r, 1_000));
    const before = cpuSnapshot(mesh.process.pid!);
    const t0 = now();
    mesh.process.stdin!.write(`${JSON.stringify({ publish: { rate: TARGET.hubRate, ...HUB_WINDOW } })}\n`);
    const published = (await nextLine(mesh, "published", HUB_WINDOW.warmupMs + HUB_WINDOW.durationMs + 60_000)) as {
      warmup: number;
      measured: number;
    };
    const expected = published.measured * connections.length;
    // The tail: wait (bounded) for what is still on its way.
    for (let i = 0; i < 100 && delivered < expected; i++) await new Promise((r) => setTimeout(r, 50));
    const after = cpuSnapshot(mesh.process.pid!);
    const wallMs = now() - t0;
    const messages = connections.length * (published.warmup + published.measured) * 2;
    return {
      clients: connections.length,
      latencies: Float64Array.from(latencies).sort(),
      delivered,
      expected,
      published: published.measured,
      meshCores: (after.serverMs - before.serverMs) / wallMs,
      loadCores: (after.loadMs - before.loadMs) / wallMs,
      meshUsPerMessage: ((after.serverMs - before.serverMs) * 1000) / messages,
      loadUsPerMessage: ((after.loadMs - before.loadMs) * 1000) / messages,
      usage: cpuUsage(before, after, published.measured),
    };
  } finally {
    stopping = true;
    await Promise.all(connections.map((c) => c.stop().catch(() => {})));
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Reads

interface Measured {
  result: LoadResult;
  serverUsPerRequest: number;
  usage: ReturnType<typeof cpuUsage>;
}

async function reads(mesh: Server): Promise<{ agents: Measured; assets: Measured; listed: number }> {
  const { agentsUrl, trackingUrl } = mesh.ready as Extract<AgentsReady, { role: "mesh" }>;
  const ids = await Promise.all(Array.from({ length: AGENTS }, () => spawnAgent(agentsUrl)));
  const asset = await fetch(`${trackingUrl}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Van 7", description: "Benchmark asset", category: "vehicle", speedThresholdKmh: 90 }),
    signal: AbortSignal.timeout(10_000),
  });
  if (asset.status !== 200) throw new Error(`seeding the asset answered ${asset.status}: ${await asset.text()}`);
  const assetId = ((await asset.json()) as { id: string }).id;
  const listed = await api(agentsUrl, "GET", "/api/agents", BENCH_KEYS.user);
  if (listed.status !== 200) throw new Error(`GET /api/agents answered ${listed.status}`);
  const measure = async (url: string, headers?: Record<string, string>): Promise<Measured> => {
    let before = cpuSnapshot(mesh.process.pid!);
    const result = await httpLoad(url, READ_WINDOW, () => (before = cpuSnapshot(mesh.process.pid!)), headers ? { headers } : undefined);
    const usage = cpuUsage(before, cpuSnapshot(mesh.process.pid!), result.requests);
    return { result, serverUsPerRequest: usage.serverUsPerRequest, usage };
  };
  const agents = await measure(`${agentsUrl}/api/agents`, { "x-api-key": BENCH_KEYS.user });
  const assets = await measure(`${trackingUrl}/api/assets/${assetId}`);
  await Promise.all(ids.map((id) => stopAgent(agentsUrl, id)));
  return { agents, assets, listed: (listed.body as unknown[]).length };
}

// ---------------------------------------------------------------------------------------------

async function postgresVersion(url: string): Promise<string> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<{ server_version: string }>("show server_version")).rows[0]?.server_version ?? "unknown";
  } finally {
    await db.end();
  }
}

async function main(): Promise<void> {
  const baseUrl = process.env.DATABASE_URL || LOCAL_POSTGRES;
  const natsUrl = process.env.NATS_URL || ((await reachable(LOCAL_NATS)) ? LOCAL_NATS : undefined);
  const children: ChildProcess[] = [];
  let database: TestDatabase | undefined;
  const cleanUp = async (): Promise<void> => {
    await Promise.all(children.map(stopChild));
    await database?.drop();
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  try {
    const background = await backgroundLoad(1_000);
    database = await createTestDatabaseUrl(baseUrl);
    const postgres = await postgresVersion(database.url);
    const env = { ...process.env, NATS_URL: natsUrl ?? "" };
    const fake = await startServer(["fake"], env, children);
    const mesh = await startServer(["mesh", database.url, (fake.ready as { url: string }).url, FAKE_KEY], env, children);
    const ready = mesh.ready as Extract<AgentsReady, { role: "mesh" }>;

    const turnFigures = runs("turns") ? await turns(mesh, fake) : undefined;
    const readFigures = runs("reads") ? await reads(mesh) : undefined;
    const hubFigures = runs("hub") ? await eventsHub(mesh) : undefined;

    const cpu = cpus();
    const busy = (u: { machineBusy: number; others: number }) =>
      `machine ${(u.machineBusy * 100).toFixed(0)} % busy, others ${(u.others * 100).toFixed(0)} %`;
    console.log(
      `\n${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}, PostgreSQL ${postgres}, bus ${ready.bus === "nats" ? "NATS" : "in-process"}` +
        `${quick ? " (--quick: short windows, not figures)" : ""}; background load before the run ${(background * 100).toFixed(0)} %` +
        ` (${background < 0.1 ? "quiet" : "busy"})`,
    );
    const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    const lines: string[] = [];
    if (turnFigures) {
      const t = turnFigures;
      const p50 = (s: Float64Array) => percentile(s, 50);
      for (const [label, s] of [
        ["direct to the fake (baseline)", t.direct],
        ["REST POST /api/agents/{id}/message", t.rest],
        ["hub StreamChat", t.hub],
      ] as const) {
        console.log(
          `${`turn, ${label}`.padEnd(48)} n ${String(s.length).padStart(5)}  p50 ${ms(p50(s))}  p90 ${ms(percentile(s, 90))}  p99 ${ms(percentile(s, 99))}`,
        );
      }
      console.log(
        `${"  mesh CPU per gateway turn".padEnd(48)} ${t.meshUsPerTurn.toFixed(0)} µs; fake ${t.fakeUsPerRequest.toFixed(0)} µs per chat request; ${busy(t.usage)}`,
      );
      const restOverhead = p50(t.rest) - p50(t.direct);
      const hubOverhead = p50(t.hub) - p50(t.direct);
      lines.push(
        `target REST turn overhead < ${TARGET.overheadMs} ms at p50: ${ms(restOverhead)}, ${verdict(restOverhead < TARGET.overheadMs)}`,
      );
      lines.push(
        `target hub StreamChat overhead < ${TARGET.overheadMs} ms at p50: ${ms(hubOverhead)}, ${verdict(hubOverhead < TARGET.overheadMs)}`,
      );
    }
    if (readFigures) {
      const row = (label: string, m: Measured) =>
        console.log(
          `${label.padEnd(48)} ${m.result.rps.toFixed(0).padStart(7)} /s  p50 ${ms(m.result.p50)}  p99 ${ms(m.result.p99)}  ` +
            `server ${m.serverUsPerRequest.toFixed(0)} µs/req  errors ${m.result.errors}; ${busy(m.usage)}`,
        );
      row(
        `GET /api/agents (key, rate limit ${process.env.BENCH_RATE_LIMIT === "off" ? "off" : "on"}), ${READ_CONNECTIONS} conn, ${readFigures.listed} agents`,
        readFigures.agents,
      );
      row(`GET /api/assets/{id} (tracking), ${READ_CONNECTIONS} conn`, readFigures.assets);
      const ratio = readFigures.agents.result.rps / readFigures.assets.result.rps;
      const errors = readFigures.agents.result.errors + readFigures.assets.result.errors;
      lines.push(
        `target GET /api/agents >= ${TARGET.readRatio}x asset read: ${ratio.toFixed(2)}x, ${verdict(ratio >= TARGET.readRatio && errors === 0)}`,
      );
    }
    if (hubFigures) {
      const h = hubFigures;
      console.log(
        `${`/hubs/events, ${h.clients} StreamEvents clients, ${TARGET.hubRate} events/s`.padEnd(48)} p50 ${ms(percentile(h.latencies, 50))}  ` +
          `p90 ${ms(percentile(h.latencies, 90))}  p99 ${ms(percentile(h.latencies, 99))}  max ${ms(percentile(h.latencies, 100))}`,
      );
      console.log(
        `${"  delivered".padEnd(48)} ${h.delivered}/${h.expected} (${((h.delivered / h.expected) * 100).toFixed(2)} %) of ${h.published} events; ` +
          `mesh ${h.meshCores.toFixed(2)} cores, load generator ${h.loadCores.toFixed(2)}; ${busy(h.usage)}`,
      );
      console.log(
        `${"  CPU per hub message".padEnd(48)} mesh ${h.meshUsPerMessage.toFixed(2)} µs, load generator ${h.loadUsPerMessage.toFixed(2)} µs ` +
          "(2 messages per event and client, warm-up included)",
      );
      const p99 = percentile(h.latencies, 99);
      const atScale = h.clients >= TARGET.hubClients;
      lines.push(
        `target events hub p99 < ${TARGET.hubP99Ms} ms at ${TARGET.hubClients} clients: ${ms(p99)}, ` +
          `${atScale ? verdict(p99 < TARGET.hubP99Ms && h.delivered === h.expected) : `not at scale (${h.clients} clients)`}`,
      );
    }
    console.log(`\n${lines.join("\n")}`);
  } finally {
    await cleanUp();
  }
}

await main();
