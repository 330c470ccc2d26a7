// Composition root: wires configuration, database, bus, outbox relay, service host and REST
// fronts for one of the three run modes (all-in-one, one service, gateway only).
import type { Interceptor, Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import { createFront } from "../gateway/index.js";
import { openMeshBackends } from "./mesh-backends.js";
import type { MeshConfig } from "./mesh-config.js";
import { modules as registered } from "./registry.js";
import { assertOpenApiBindAllowed, authInterceptor, openApiWarning } from "./runtime/auth/index.js";
import type { EventBus } from "./runtime/bus/index.js";
import { type ConfigWatch, ConfigError, leavesOf, runtimeSettings, watchConfig } from "./runtime/config/index.js";
import { type Database, openDatabase } from "./runtime/database/index.js";
import {
  buildRoutes,
  createBalancedTransport,
  createDirectTransport,
  DEFAULT_SKIP_MS,
  createGrpcClientTransport,
  errorInterceptor,
  requestContextInterceptor,
  type ServiceRegistration,
  splitAddresses,
  startServiceHost,
} from "./runtime/host/index.js";
import { isProtected, type ModuleAuth, type ServiceModule } from "./runtime/module/index.js";
import { outboxModule } from "./runtime/outbox/index.js";
import { clientTracingInterceptor, serverTracingInterceptor } from "./runtime/telemetry/index.js";
import { requiredFieldsInterceptor, textIntegrityInterceptor } from "./runtime/validation/index.js";

export type MeshMode = { kind: "all" } | { kind: "service"; name: string } | { kind: "gateway" };

export interface MeshOptions {
  config: MeshConfig;
  logger: Logger;
  mode: MeshMode;
  /** The modules to host; default: the registry's (tests put a module of their own in one's place). */
  modules?: readonly ServiceModule[];
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

export function modulesFor(mode: MeshMode, modules: readonly ServiceModule[] = registered): readonly ServiceModule[] {
  if (mode.kind !== "service") return modules;
  const module = modules.find((m) => m.name === mode.name);
  if (!module) throw new Error(`Unknown service '${mode.name}'. Known: ${modules.map((m) => m.name).join(", ")}.`);
  return [module];
}

export async function startMesh({ config, logger, mode, modules: hosted }: MeshOptions): Promise<Mesh> {
  const modules = modulesFor(mode, hosted);
  const runtime = config.runtime;
  const settingsOf = (module: ServiceModule) => config.get(module.settings);
  // Before anything opens: bad keys, or an open API on a public address, stop start-up.
  const auths = new Map<ServiceModule, ModuleAuth>(modules.map((m) => [m, m.auth(settingsOf(m))]));
  // A module with no operations yet has nothing to guard.
  const guarded = (m: ServiceModule) => isProtected(auths.get(m)!) || m.services.length === 0;
  assertOpenApiBindAllowed({
    allowAnonymousPublicBind: runtime.auth.allowAnonymousPublicBind,
    apis: modules.map((m) => ({
      title: m.title,
      protected: guarded(m),
      credentialSetting: m.credentialSetting ?? "its credentials",
      allowAnonymousPublicBind: m.allowAnonymousPublicBind?.value(settingsOf(m)) ?? false,
      allowSetting: m.allowAnonymousPublicBind?.setting,
      listeners: [
        ...(mode.kind !== "gateway" ? [{ setting: "Services:Host", host: runtime.services.host }] : []),
        ...(mode.kind !== "service" ? [{ setting: frontHostSetting(m), host: frontHost(m) }] : []),
      ],
    })),
  });
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) {
      await closer().catch((err: unknown) => logger.error({ err }, "error during shutdown"));
    }
  };
  /** The setting that chose the front's address: the module's own when set, else Fronts:Host. */
  function frontHostSetting(module: ServiceModule): string {
    return module.front.host?.(settingsOf(module)) !== undefined ? (module.front.hostSetting ?? "Fronts:Host") : "Fronts:Host";
  }
  function frontHost(module: ServiceModule): string {
    return module.front.host?.(settingsOf(module)) ?? runtime.fronts.host;
  }

  try {
    let transports: (module: ServiceModule) => Transport;
    let mesh: Omit<Mesh, "fronts" | "close"> = { drainOutbox: async () => {} };

    if (mode.kind === "gateway") {
      // Services:<Name>:Address lists one or more service hosts: calls are balanced over them, and
      // one refusing connections is skipped for a while (balanced-transport.ts).
      transports = (module) =>
        createBalancedTransport({
          addresses: splitAddresses(module.address(settingsOf(module))),
          transportFor: (baseUrl) => createGrpcClientTransport({ baseUrl, interceptors: [clientTracingInterceptor()] }),
          onSkip: (address) =>
            logger.warn(
              { service: module.name, address, skipSeconds: DEFAULT_SKIP_MS / 1000 },
              "a service address refused the connection; calls go to the others for a while",
            ),
        });
    } else {
      const { db, bus, relay, depsOf } = await openMeshBackends({
        config,
        logger,
        databaseModules: modules,
        streamModules: modules,
        closers,
      });

      const registrations: { registration: ServiceRegistration; auth: ModuleAuth }[] = [];
      const reloaders: { module: ServiceModule; reload: (settings: unknown) => Promise<void> | void }[] = [];
      // Interceptors a module runs around its own services (outside auth), by service name.
      const ownInterceptors = new Map<string, readonly Interceptor[]>();
      for (const module of modules) {
        const started = await module.start(depsOf(module));
        for (const worker of started.workers ?? []) closers.push(() => worker.stop());
        if (started.reload) reloaders.push({ module, reload: started.reload.bind(started) as (settings: unknown) => Promise<void> | void });
        for (const registration of started.services) {
          registrations.push({ registration, auth: auths.get(module)! });
          if (started.interceptors?.length) ownInterceptors.set(registration.service.typeName, started.interceptors);
        }
        const openWarning = guarded(module) ? undefined : openApiWarning({ title: module.title, protected: false });
        if (openWarning) logger.warn(openWarning);
      }
      if (reloaders.length > 0) {
        const watch = watchModuleSettings(config, modules, reloaders, logger);
        closers.push(async () => watch.stop());
      }
      // Auth before validation: an unauthenticated caller learns nothing about a request's shape.
      const auth = authInterceptor({
        services: registrations.map(({ registration, auth }) => ({ service: registration.service, credentials: auth })),
        logger,
      });
      const routes = buildRoutes({
        services: registrations.map((r) => r.registration),
        interceptors: [
          requestContextInterceptor,
          serverTracingInterceptor(),
          errorInterceptor(logger, { unavailableRetryAfterSeconds: runtime.fronts.unavailableRetryAfterSeconds }),
          perServiceInterceptor(ownInterceptors),
          auth,
          requiredFieldsInterceptor,
          // Text PostgreSQL cannot store (NUL, lone surrogates) is refused here, naming the field, for every caller.
          textIntegrityInterceptor,
        ],
      });
      const host = await startServiceHost({
        host: runtime.services.host,
        port: runtime.services.port,
        routes,
        logger,
        trustedProxies: (runtime.services.trustedProxies ?? "")
          .split(",")
          .map((a) => a.trim())
          .filter(Boolean),
      });
      closers.push(() => host.close());
      logger.info(
        { url: `http://${runtime.services.host}:${host.port}`, protocols: "gRPC, gRPC-web, Connect (h2c)" },
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
      for (const module of modules) {
        const { front: declared } = module;
        const host = frontHost(module);
        const transport = transports(module);
        const front = createFront({
          name: declared.name,
          host,
          port: declared.port(settingsOf(module)),
          services: module.services,
          transport,
          routes: declared.routes?.({ settings: settingsOf(module), transport, logger: logger.child({ front: declared.name }) }),
          defaultStyle: { errorStyle: declared.errorStyle, jsonNaming: declared.jsonNaming },
          logger,
          accessLogLevel: runtime.logging.accessLevel,
          bodyLimitBytes: runtime.fronts.bodyLimitBytes,
          sseKeepAliveSeconds: runtime.fronts.sseKeepAliveSeconds,
          headersTimeoutSeconds: runtime.fronts.headersTimeoutSeconds,
          requestTimeoutSeconds: runtime.fronts.requestTimeoutSeconds,
          maxConnections: runtime.fronts.maxConnections,
          maxHeaderBytes: runtime.fronts.maxHeaderBytes,
          unavailableRetryAfterSeconds: runtime.fronts.unavailableRetryAfterSeconds,
          ...declared.policy?.(settingsOf(module)),
        });
        const { port } = await front.listen();
        closers.push(() => front.close());
        const url = `http://${host}:${port}`;
        fronts.push({ name: declared.name, port, url });
        logger.info({ front: declared.name, url }, `${declared.title} listening on ${url}`);
      }
    }
    return { ...mesh, fronts, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Hot reload: a change of a module's reloadable settings in the appsettings files reaches its `reload`. */
function watchModuleSettings(
  config: MeshConfig,
  modules: readonly ServiceModule[],
  reloaders: readonly { module: ServiceModule; reload: (settings: unknown) => Promise<void> | void }[],
  logger: Logger,
): ConfigWatch {
  const keysOf = new Map(reloaders.map(({ module }) => [module, new Set(leavesOf(module.settings).map((leaf) => leaf.key))]));
  return watchConfig({
    current: config,
    load: () => config.load(),
    schemas: [runtimeSettings, ...modules.map((m) => m.settings)],
    logger,
    async onChange(applied, changedKeys) {
      for (const { module, reload } of reloaders) {
        if (changedKeys.some((key) => keysOf.get(module)!.has(key))) await reload(applied.get(module.settings));
      }
    },
  });
}

/** Runs each service's own interceptors (a module's); a service without any goes straight on. */
function perServiceInterceptor(byService: ReadonlyMap<string, readonly Interceptor[]>): Interceptor {
  return (next) => {
    // Connect builds the chain once per method; the method's service is known at the first call.
    const chains = new Map<string, ReturnType<Interceptor>>();
    return (req) => {
      const own = byService.get(req.service.typeName);
      if (own === undefined) return next(req);
      let chain = chains.get(req.service.typeName);
      if (chain === undefined) {
        chain = own.reduceRight<ReturnType<Interceptor>>((inner, interceptor) => interceptor(inner), next);
        chains.set(req.service.typeName, chain);
      }
      return chain(req);
    };
  };
}

/**
 * Runs one module's administrative command on the configured database (migrated first, as at
 * start); answers what to print. Events it records wait in the outbox for the next relay.
 */
export async function runModuleCommand(options: {
  config: MeshConfig;
  logger: Logger;
  module: ServiceModule;
  command: string;
  args: readonly string[];
}): Promise<string> {
  const { config, logger, module } = options;
  const command = module.commands?.find((c) => c.name === options.command);
  if (!command) throw new ConfigError(`Unknown command '${options.command}' of ${module.name}.`);
  const runtime = config.runtime;
  const db = await openDatabase({
    url: runtime.database.url,
    dataDir: runtime.data.dir,
    poolSize: runtime.database.poolSize,
    modules: [outboxModule, ...registered.map((m) => m.database)],
    logger,
  });
  try {
    return await command.run(options.args, { settings: config.get(module.settings), db, outbox: { notify() {} }, logger });
  } finally {
    await db.close();
  }
}
