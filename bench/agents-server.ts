// The servers of `npm run bench:agents`, each in its own child process so the load generator
// never shares their event loop:
//   agents-server.ts fake                          the loopback OpenAI-compatible fake
//                                                  (test/support/fake-openai.ts), every chat request
//                                                  answered with the same streamed reply
//   agents-server.ts mesh <db-url> <fake-url> <key> the all-in-one mesh with the agent gateway: auth
//                                                  on (keys below), rate limit on at 1,000,000 a minute,
//                                                  the fake as its one provider; NATS when NATS_URL
//                                                  is set, else the in-process bus
// Each prints one `{"benchReady": ...}` line; the mesh then takes `{"publish": {rate, warmupMs,
// durationMs}}` lines on stdin: AgentTurnCompleted events published straight onto the bus at that
// rate, each stamped (occurred_at, to the microsecond) just before its publish. Both stop when stdin
// closes or on SIGTERM.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { AgentTurnCompletedSchema } from "../gen/agents/v1/events_pb.js";
import { startMesh } from "../services/mesh.js";
import { loadMeshConfig } from "../services/mesh-config.js";
import { subjectOf } from "../services/runtime/bus/index.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { startFakeOpenAi } from "../test/support/fake-openai.js";

export const BENCH_KEYS = {
  user: "bench-user-key-7f3a9c2e51d04b86",
  operator: "bench-operator-key-7f3a9c2e51d04b86",
  admin: "bench-admin-key-7f3a9c2e51d04b86",
} as const;
export const FAKE_KEY = "sk-bench-7f3a9c2e51d04b8617c3e0d2";
/** The streamed reply of every chat request: a role chunk, these 12 deltas, finish, usage, [DONE]. */
export const REPLY = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", " and", " runs", "."];
/** agentId of the published events: warm-up and measured ones told apart. */
export const EVENT_AGENTS = { warmup: "00000000-0000-4000-8000-00000000000a", measured: "00000000-0000-4000-8000-00000000000b" };

export type AgentsReady =
  | { role: "fake"; url: string }
  | { role: "mesh"; agentsUrl: string; trackingUrl: string; bus: string; database: string };

interface PublishCommand {
  rate: number;
  warmupMs: number;
  durationMs: number;
}

const now = () => performance.timeOrigin + performance.now();

function ready(message: AgentsReady): void {
  process.stdout.write(`${JSON.stringify({ benchReady: message })}\n`);
}

async function serveFake(): Promise<() => Promise<void>> {
  const fake = await startFakeOpenAi({ apiKey: FAKE_KEY, models: ["gpt-4o-mini"] });
  fake.fallback = { kind: "reply", content: REPLY, usage: { prompt_tokens: 24, completion_tokens: REPLY.length } };
  // The fake records every request; a benchmark's worth would only grow the heap.
  const requests = fake.requests;
  const trim = setInterval(() => requests.splice(0, requests.length), 1_000);
  ready({ role: "fake", url: fake.url });
  return async () => {
    clearInterval(trim);
    await fake.close();
  };
}

async function serveMesh(databaseUrl: string, fakeUrl: string, fakeKey: string): Promise<() => Promise<void>> {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-bench-agents-"));
  const flags = [
    `--Database:Url=${databaseUrl}`,
    `--Data:Dir=${dataDir}`,
    `--AgentGateway:DataDir=${dataDir}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Logging:Level=warn",
    // The agent gateway's own telemetry prints every turn's spans to the console by default.
    "--Gateway:Telemetry:Enabled=false",
    `--Providers:fake:BaseUrl=${fakeUrl}`,
    `--Providers:fake:ApiKey=${fakeKey}`,
    "--Providers:fake:Models:0=gpt-4o-mini",
    "--Gateway:Agents:MaxConcurrentAgents=1000",
    "--Gateway:Auth:Enabled=true",
    `--Gateway:Auth:ApiKeys=${JSON.stringify([
      { Key: BENCH_KEYS.user, Name: "bench-user", Role: "User" },
      { Key: BENCH_KEYS.operator, Name: "bench-operator", Role: "Operator" },
      { Key: BENCH_KEYS.admin, Name: "bench-admin", Role: "Admin" },
    ])}`,
    // BENCH_RATE_LIMIT=off measures the reads without the shared window (what the limit costs).
    `--Gateway:RateLimit:Enabled=${process.env.BENCH_RATE_LIMIT === "off" ? "false" : "true"}`,
    "--Gateway:RateLimit:MaxRequestsPerMinute=1000000",
    ...(process.env.NATS_URL ? [`--Nats:Url=${process.env.NATS_URL}`] : []),
  ];
  const config = loadMeshConfig({ env: {}, flags, cwd: process.cwd() });
  const logger = createLogger({ level: config.runtime.logging.level });
  const mesh = await startMesh({ config, logger, mode: { kind: "all" } });
  const bus = mesh.bus!;
  const agents = mesh.fronts.find((f) => f.name === "agents");
  const tracking = mesh.fronts.find((f) => f.name === "tracking");
  if (!agents || !tracking) throw new Error("the mesh started without the agents or tracking front");
  ready({ role: "mesh", agentsUrl: agents.url, trackingUrl: tracking.url, bus: bus.kind, database: String(mesh.db?.mode) });

  const subject = subjectOf(AgentTurnCompletedSchema);
  let turnIndex = 0;
  const publish = async (agentId: string): Promise<void> => {
    const eventId = randomUUID();
    const event = create(AgentTurnCompletedSchema, {
      eventId,
      agentId,
      turnIndex: turnIndex++,
      durationMs: 5n,
      promptTokens: 24n,
      completionTokens: 12n,
    });
    // Stamped last, just before the publish: the latency clock starts here.
    const at = now();
    event.occurredAt = create(TimestampSchema, { seconds: BigInt(Math.floor(at / 1000)), nanos: Math.round((at % 1000) * 1e6) });
    await bus.publish(subject, toBinary(AgentTurnCompletedSchema, event), { id: eventId });
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
      for (; sent < due; sent++) inFlight.push(publish(sent < warmupCount ? EVENT_AGENTS.warmup : EVENT_AGENTS.measured));
      await new Promise((r) => setTimeout(r, Math.max(0, start + sent * interval - now())));
    }
    await Promise.all(inFlight);
    process.stdout.write(`${JSON.stringify({ published: { warmup: warmupCount, measured: total - warmupCount } })}\n`);
  };
  createInterface({ input: process.stdin }).on("line", (line) => {
    const command = JSON.parse(line) as { publish?: PublishCommand };
    if (command.publish) void run(command.publish);
  });
  return async () => {
    await mesh.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
}

async function main(): Promise<void> {
  const [role, databaseUrl, fakeUrl, fakeKey] = process.argv.slice(2);
  const stop =
    role === "fake"
      ? await serveFake()
      : role === "mesh" && databaseUrl && fakeUrl && fakeKey
        ? await serveMesh(databaseUrl, fakeUrl, fakeKey)
        : undefined;
  if (!stop) throw new Error("usage: agents-server.ts fake | mesh <database-url> <fake-url> <fake-key>");
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`bench agents servers: shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // The parent holds our stdin open; when it goes away (even killed), so do we.
  process.stdin.on("end", shutdown).resume();
  process.on("SIGTERM", shutdown);
}

// Imported by bench/agents.ts for its constants only: the servers start when this file is run.
if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
