// Composition root: wires configuration, database, bus, outbox relay, service host and REST
// fronts for one of the three run modes (all-in-one, one service, gateway only).
import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { createFront } from "../gateway/index.js";
import { assertOpenApiBindAllowed, authInterceptor, createApiKeyStore, openApiWarning } from "./runtime/auth/index.js";
import { openBus, type EventBus } from "./runtime/bus/index.js";
import { redactUrl, type MeshworkConfig } from "./runtime/config/index.js";
import { openDatabase, type Database } from "./runtime/database/index.js";
import { buildRoutes, createDirectTransport, errorInterceptor, requestContextInterceptor, startServiceHost } from "./runtime/host/index.js";
import type { ServiceModule } from "./runtime/module/index.js";
import { outboxModule, startOutboxRelay } from "./runtime/outbox/index.js";
import { clientTracingInterceptor, serverTracingInterceptor } from "./runtime/telemetry/index.js";
import { trackingModule } from "./tracking/index.js";
import { requiredFieldsInterceptor } from "./runtime/validation/index.js";
import { frontDefinitions } from "./fronts.js";

/** Every bounded context Meshwork can host. */
export const allModules: readonly ServiceModule[] = [trackingModule];

export type MeshMode = { kind: "all" } | { kind: "service"; name: string } | { kind: "gateway" };

export interface MeshOptions {
  config: MeshworkConfig;
  logger: Logger;
  mode: MeshMode;
}

export interface RunningFront {
  name: string;
  port: number;
  url: string;
}

export interface Mesh {
  /** The service host's port (gRPC, gRPC-web, Connect), when this process hosts services. */
  servicePort?: number;
  fronts: RunningFront[];
  db?: Database;
  bus?: EventBus;
  /** Publishes every pending outbox event now (tests, shutdown). */
  drainOutbox(): Promise<void>;
  close(): Promise<void>;
}

export function modulesFor(mode: MeshMode): readonly ServiceModule[] {
  if (mode.kind !== "service") return allModules;
  const module = allModules.find((m) => m.name === mode.name);
  if (!module) throw new Error(`Unknown service '${mode.name}'. Known: ${allModules.map((m) => m.name).join(", ")}.`);
  return [module];
}

export async function startMesh({ config, logger, mode }: MeshOptions): Promise<Mesh> {
  const modules = modulesFor(mode);
  // Before anything opens: bad keys, or an open API (no key) on a public address, stop start-up.
  const apiKeys = createApiKeyStore(config.auth.apiKeys);
  assertOpenApiBindAllowed({
    apiKeyCount: apiKeys.size,
    allowAnonymousPublicBind: config.auth.allowAnonymousPublicBind,
    listeners: [
      ...(mode.kind !== "gateway" ? [{ setting: "Services:Host", host: config.services.host }] : []),
      ...(mode.kind !== "service" ? [{ setting: "Gateway:Host", host: config.gateway.host }] : []),
    ],
  });
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) {
      await closer().catch((err: unknown) => logger.error({ err }, "error during shutdown"));
    }
  };

  try {
    let transports: (module: ServiceModule) => Transport;
    let mesh: Omit<Mesh, "fronts" | "close"> = { drainOutbox: async () => {} };

    if (mode.kind === "gateway") {
      transports = (module) =>
        createGrpcTransport({
          baseUrl: module.front.address(config),
          interceptors: [clientTracingInterceptor()],
        });
    } else {
      const db = await openDatabase({
        url: config.database.url,
        dataDir: config.dataDir,
        poolSize: config.database.poolSize,
        modules: [outboxModule, ...modules.map((m) => m.database)],
        logger,
      });
      closers.push(() => db.close());
      logger.info(
        { database: db.mode === "embedded" ? `embedded (${config.dataDir}/pg)` : redactUrl(config.database.url!) },
        "database ready",
      );

      const bus = await openBus({ url: config.nats.url, logger, replayWindow: config.events.replayWindow });
      closers.push(() => bus.close());
      await bus.ensureStreams(modules.flatMap((m) => m.streams));
      logger.info({ bus: bus.kind === "nats" ? redactUrl(config.nats.url!) : "in-process" }, "event bus ready");

      const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: config.outbox.pollIntervalMs });
      closers.push(() => relay.stop());

      const deps = { config, db, bus, outbox: relay, logger };
      const runtimes = [];
      for (const module of modules) {
        const runtime = await module.start(deps);
        closers.push(() => runtime.stop());
        runtimes.push(runtime);
      }
      const services = runtimes.flatMap((r) => r.services);
      const openWarning = openApiWarning(
        apiKeys.size,
        modules.map((m) => m.name),
      );
      if (openWarning) logger.warn(openWarning);
      // Auth before validation: an unauthenticated caller learns nothing about a request's shape.
      const auth = authInterceptor({ apiKeys, services: services.map((s) => s.service), logger });
      const routes = buildRoutes({
        services,
        interceptors: [requestContextInterceptor, serverTracingInterceptor(), errorInterceptor(logger), auth, requiredFieldsInterceptor],
      });
      const host = await startServiceHost({ host: config.services.host, port: config.services.port, routes, logger });
      closers.push(() => host.close());
      logger.info(
        { url: `http://${config.services.host}:${host.port}`, protocols: "gRPC, gRPC-web, Connect (h2c)" },
        "service host listening",
      );

      // Calls the handlers directly behind the same server interceptors (no serialization);
      // client-side spans on the in-process hop too, so a trace shows gateway → service.
      // No defensive copies: the gateway builds each request afresh and only serializes answers.
      const inProcess = createDirectTransport(routes, { interceptors: [clientTracingInterceptor()], defensiveCopies: false });
      transports = () => inProcess;
      mesh = { servicePort: host.port, db, bus, drainOutbox: () => relay.drain() };
    }

    const fronts: RunningFront[] = [];
    if (mode.kind !== "service") {
      for (const definition of frontDefinitions) {
        const attached = modules.filter((m) => m.front.name === definition.name);
        if (attached.length > 1) throw new Error(`front ${definition.name}: one service module per front is supported`);
        const front = createFront({
          name: definition.name,
          host: config.gateway.host,
          port: definition.port(config),
          services: attached.flatMap((m) => m.services),
          // A front with nothing attached yet never calls its transport: every path answers 404.
          transport: attached[0] ? transports(attached[0]) : createRouterTransport(() => {}),
          defaultStyle: definition.style,
          logger,
          bodyLimitBytes: config.gateway.bodyLimitBytes,
          sseKeepAliveSeconds: config.gateway.sseKeepAliveSeconds,
        });
        const { port } = await front.listen();
        closers.push(() => front.close());
        const url = `http://${config.gateway.host}:${port}`;
        fronts.push({ name: definition.name, port, url });
        logger.info({ front: definition.name, url }, `${definition.name} REST front listening on ${url}`);
      }
    }
    return { ...mesh, fronts, close };
  } catch (err) {
    await close();
    throw err;
  }
}
