// `npm run bench:webhooks [-- --events=500 --endpoints=10]`: how many signed webhook deliveries per
// second one tracking instance sends to a local receiver, and how long an event takes to arrive.
// Embedded by default; with DATABASE_URL / NATS_URL set it runs on real PostgreSQL (a fresh
// database, dropped afterwards) and NATS JetStream. A benchmark, not a test.
//
// Events are fired through POST /api/webhooks/test, so each one travels the whole path: outbox,
// bus, the durable consumer, the delivery queue and the dispatcher. Every endpoint takes every
// event, so N events make N x endpoints deliveries.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "nats";
import { Webhook } from "standardwebhooks";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createTestDatabaseUrl } from "../test/support/test-database.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { startMesh } from "../services/mesh.js";

const arg = (name: string, fallback: number) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.split("=")[1]) : fallback;
};
const events = arg("events", 500);
const endpointCount = arg("endpoints", 10);
const firingConcurrency = 8;
const target = 500;

interface Receipt {
  webhookId: string;
  /** performance.now() at arrival, for rates. */
  at: number;
  /** Date.now() at arrival, to compare with the alert's createdAt. */
  wall: number;
  body: string;
  headers: Record<string, string>;
}

async function main(): Promise<void> {
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  const receipts: Receipt[] = [];
  const receiver = http.createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      receipts.push({
        webhookId: String(req.headers["webhook-id"]),
        at: performance.now(),
        wall: Date.now(),
        body: Buffer.concat(chunks).toString("utf8"),
        headers: req.headers as Record<string, string>,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const port = (receiver.address() as AddressInfo).port;

  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-bench-webhooks-"));
  const db = process.env.DATABASE_URL ? await createTestDatabaseUrl(process.env.DATABASE_URL) : undefined;
  const endpoints = Array.from({ length: endpointCount }, (_, i) => ({ Url: `http://127.0.0.1:${port}/r${i}`, Secret: secret }));
  const config = loadMeshConfig({
    env: {},
    cwd: dataDir,
    flags: [
      `--Data:Dir=${dataDir}`,
      "--Services:Port=0",
      "--Fronts:Tracking:Port=0",
      "--Fronts:Protection:Port=0",
      "--Gateway:Server:Port=0",
      "--Telemetry:Exporter=none",
      "--Logging:Level=warn",
      `--Webhooks:Endpoints=${JSON.stringify(endpoints)}`,
      "--Webhooks:AllowLoopback=true",
      ...(db ? [`--Database:Url=${db.url}`] : []),
      ...(process.env.NATS_URL ? [`--Nats:Url=${process.env.NATS_URL}`] : []),
    ],
  });
  const mesh = await startMesh({ config, logger: createLogger({ level: "warn" }), mode: { kind: "all" } });
  const base = mesh.fronts.find((f) => f.name === "tracking")!.url;
  const mode = `${db ? "PostgreSQL" : "embedded PGlite"} + ${process.env.NATS_URL ? "NATS JetStream" : "in-process bus"}`;

  const fireOne = async () => {
    const res = await fetch(`${base}/api/webhooks/test`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    if (res.status !== 200) throw new Error(`test event answered ${res.status}`);
    await res.arrayBuffer();
  };
  const waitFor = async (count: number) => {
    const deadline = Date.now() + 300_000;
    while (receipts.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    if (receipts.length < count) throw new Error(`only ${receipts.length} of ${count} deliveries arrived`);
  };
  // From the alert's creation (the sample's createdAt, set when the test call recorded it) to its arrival.
  const latencies = (from: number) =>
    receipts
      .slice(from)
      .map((r) => r.wall - Date.parse((JSON.parse(r.body) as { data: { createdAt: string } }).data.createdAt))
      .sort((a, b) => a - b);
  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  const summary = (sorted: number[]) =>
    `p50 ${pct(sorted, 50).toFixed(0)} ms, p95 ${pct(sorted, 95).toFixed(0)} ms, p99 ${pct(sorted, 99).toFixed(0)} ms, max ${sorted[sorted.length - 1]!.toFixed(0)} ms`;

  try {
    // 1. Unloaded: one event at a time, each waited for, after a warm-up event.
    await fireOne();
    await waitFor(endpointCount);
    const quietFrom = receipts.length;
    for (let i = 0; i < 20; i++) {
      await fireOne();
      await waitFor(quietFrom + (i + 1) * endpointCount);
    }
    const quiet = latencies(quietFrom);

    // 2. Loaded: every event fired as fast as the test endpoint takes them.
    const loadFrom = receipts.length;
    const expected = loadFrom + events * endpointCount;
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: firingConcurrency }, async () => {
        while (next < events) {
          next++;
          await fireOne();
        }
      }),
    );
    const firedIn = performance.now() - started;
    await waitFor(expected);
    const finished = performance.now();

    const loaded = receipts.slice(loadFrom);
    const distinctEvents = new Set(loaded.map((r) => r.webhookId)).size;
    const dispatchRate = (loaded.length - 1) / ((loaded[loaded.length - 1]!.at - loaded[0]!.at) / 1000);
    const endToEndRate = loaded.length / ((finished - started) / 1000);

    const verifier = new Webhook(secret);
    let verifiedCount = 0;
    for (const r of loaded.filter((_, i) => i % 50 === 0)) {
      verifier.verify(r.body, r.headers);
      verifiedCount++;
    }

    const [one, five] = loadavg();
    console.log(`Webhook delivery benchmark (${mode})`);
    console.log(
      `machine: ${cpus()[0]?.model.trim()} x${cpus().length}, Node ${process.version}, load average ${one!.toFixed(2)} / ${five!.toFixed(2)} (1 / 5 min; a shared machine)`,
    );
    console.log(`unloaded, 20 events one at a time x ${endpointCount} endpoints: latency ${summary(quiet)}`);
    console.log(
      `loaded: ${events} events fired through POST /api/webhooks/test (${firingConcurrency} at a time, in ${firedIn.toFixed(0)} ms) x ${endpointCount} endpoints`,
    );
    console.log(
      `  deliveries: ${loaded.length} of ${events * endpointCount}, ${distinctEvents} distinct webhook-ids, ${verifiedCount} sampled signatures verified with standardwebhooks`,
    );
    console.log(
      `  dispatch rate (first to last delivery): ${dispatchRate.toFixed(0)} deliveries/s (target ${target}: ${dispatchRate >= target ? "met" : "NOT met"})`,
    );
    console.log(`  end to end (first call to last delivery): ${endToEndRate.toFixed(0)} deliveries/s`);
    console.log(`  latency under that load (queueing included): ${summary(latencies(loadFrom))}`);
  } finally {
    const [row] = await mesh.db!.em().execute<{ consumer_id: string }[]>(`select "consumer_id" from "tracking_webhook_consumer"`);
    await mesh.close();
    if (process.env.NATS_URL && row) await dropDurables(process.env.NATS_URL, row.consumer_id);
    receiver.closeAllConnections();
    receiver.close();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The durables are named after this run's throwaway database; they would outlive it on the server. */
async function dropDurables(url: string, consumerId: string): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager();
    const prefix = `tracking-webhooks-${consumerId.replace(/-/g, "").slice(0, 16)}-`;
    const names: string[] = [];
    for await (const info of jsm.consumers.list("TRACKING")) if (info.name.startsWith(prefix)) names.push(info.name);
    for (const name of names) await jsm.consumers.delete("TRACKING", name);
  } finally {
    await nc.close();
  }
}

await main();
