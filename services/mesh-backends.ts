// What every process of the mesh that runs service code opens first, in this order: the database
// (PostgreSQL at Database:Url, else the embedded one under Data:Dir, with the given modules'
// migrations), the event bus (NATS at Nats:Url, else in-process, with the given modules' streams)
// and the outbox relay that publishes what transactions recorded. `startMesh` (serving modes) and
// the pool modes (`meshwork worker`, tasks) both start here; each closer goes onto `closers`.
import type { Logger } from "pino";
import { type EventBus, openBus } from "./runtime/bus/index.js";
import { redactUrl } from "./runtime/config/index.js";
import { type Database, openDatabase } from "./runtime/database/index.js";
import type { MeshConfig } from "./mesh-config.js";
import type { ModuleDeps, ServiceModule } from "./runtime/module/index.js";
import { type OutboxRelay, outboxModule, startOutboxRelay } from "./runtime/outbox/index.js";

export interface MeshBackends {
  db: Database;
  bus: EventBus;
  relay: OutboxRelay;
  /** What a module's start (or its pool workers and tasks) is handed: its settings and these backends. */
  depsOf(module: ServiceModule): ModuleDeps<never>;
}

export async function openMeshBackends(options: {
  config: MeshConfig;
  logger: Logger;
  /** Whose migrations the database runs. */
  databaseModules: readonly ServiceModule[];
  /** Whose streams the bus makes sure of. */
  streamModules: readonly ServiceModule[];
  closers: (() => Promise<void>)[];
}): Promise<MeshBackends> {
  const { config, logger, closers } = options;
  const runtime = config.runtime;
  const db = await openDatabase({
    url: runtime.database.url,
    dataDir: runtime.data.dir,
    poolSize: runtime.database.poolSize,
    modules: [outboxModule, ...options.databaseModules.map((m) => m.database)],
    logger,
  });
  closers.push(() => db.close());
  logger.info(
    { database: db.mode === "embedded" ? `embedded (${runtime.data.dir}/pg)` : redactUrl(runtime.database.url!) },
    "database ready",
  );

  const bus = await openBus({ url: runtime.nats.url, logger, replayWindow: runtime.events.replayWindow });
  closers.push(() => bus.close());
  await bus.ensureStreams(options.streamModules.flatMap((m) => m.streams));
  logger.info({ bus: bus.kind === "nats" ? redactUrl(runtime.nats.url!) : "in-process" }, "event bus ready");

  const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: runtime.outbox.pollIntervalMs });
  closers.push(() => relay.stop());
  return {
    db,
    bus,
    relay,
    depsOf: (module) => ({
      settings: config.get(module.settings) as never,
      runtime,
      environment: config.environment,
      otelEnv: config.otelEnv,
      db,
      bus,
      outbox: relay,
      logger,
    }),
  };
}
