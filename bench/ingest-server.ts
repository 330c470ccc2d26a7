// The server of the ingest benchmark: an all-in-one mesh (every service, every front) run in a
// child process of bench/ingest.ts, so the load generator never shares its event loop.
// `ingest-server.ts <database-url> [nats-url]`; prints one `{"ingestReady": ...}` line on stdout
// and stops when stdin closes or on SIGTERM. With INGEST_PROFILE_DIR set, SIGUSR2 starts and
// stops a CPU profile (the parent brackets its measured windows with it).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { startMesh } from "../services/mesh.js";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { startTelemetry } from "../services/runtime/telemetry/index.js";

export interface IngestReady {
  ingestReady: { gatewayUrl: string; serviceUrl: string };
}

async function main(): Promise<void> {
  const [databaseUrl, natsUrl] = process.argv.slice(2);
  if (!databaseUrl) throw new Error("usage: ingest-server.ts <database-url> [nats-url]");
  const flags = [
    `--Database:Url=${databaseUrl}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Logging:Level=warn",
    ...(natsUrl ? [`--Nats:Url=${natsUrl}`] : []),
  ];
  // Defaults otherwise (pool size, outbox poll): the mesh as `meshwork` runs it, no appsettings.
  const config = loadMeshConfig({ env: {}, flags, cwd: process.cwd() });
  const logger = createLogger({ level: config.runtime.logging.level });
  // As the `meshwork` command does: context propagation on, spans no-ops with exporter none.
  const telemetry = await startTelemetry({
    serviceName: config.runtime.telemetry.serviceName,
    exporter: config.runtime.telemetry.exporter,
    otlpProtocol: config.runtime.telemetry.otlpProtocol,
    endpoint: config.runtime.telemetry.endpoint,
    env: {},
    logger,
  });
  const mesh = await startMesh({ config, logger, mode: { kind: "all" } });
  const tracking = mesh.fronts.find((front) => front.name === "tracking");
  if (!tracking || mesh.servicePort === undefined) throw new Error("the mesh started without a tracking front or service host");
  const ready: IngestReady = {
    ingestReady: { gatewayUrl: tracking.url, serviceUrl: `http://${config.runtime.services.host}:${mesh.servicePort}` },
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);

  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    (async () => {
      await mesh.close();
      await telemetry.shutdown();
    })().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`ingest server: shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // INGEST_PROFILE_DIR set: each SIGUSR2 starts, the next one stops a CPU profile of this process,
  // so the parent can profile exactly its measured windows.
  const profileDir = process.env.INGEST_PROFILE_DIR;
  if (profileDir) {
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 500 });
    let running = false;
    let n = 0;
    process.on("SIGUSR2", () => {
      running = !running;
      if (running) void session.post("Profiler.start");
      else
        void session.post("Profiler.stop").then(({ profile }) => {
          const file = join(profileDir, `ingest-${process.pid}-${++n}.cpuprofile`);
          writeFileSync(file, JSON.stringify(profile));
          process.stdout.write(`{"ingestProfile":${JSON.stringify(file)}}\n`);
        });
    });
  }

  // The parent holds our stdin open; when it goes away (even killed), so do we.
  process.stdin.on("end", shutdown).resume();
  process.on("SIGTERM", shutdown);
}

await main();
