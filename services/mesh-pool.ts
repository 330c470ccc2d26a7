// The run modes that serve nothing: `meshwork worker` (every module's pool workers, pulling their
// jobs from JetStream; replicas compete for them) and a module's tasks (`meshwork job ...`, one run
// that ends with an exit code). Both open the mesh's database, bus and outbox relay as `startMesh`
// does and hand the modules the same dependencies as `start`; no service host, no front.
import type { Logger } from "pino";
import { openMeshBackends } from "./mesh-backends.js";
import type { MeshConfig } from "./mesh-config.js";
import { modules as registered } from "./registry.js";
import { ConfigError } from "./runtime/config/index.js";
import type { ModuleDeps, ModuleTask, ServiceModule, Worker } from "./runtime/module/index.js";

interface Backends {
  depsOf(module: ServiceModule): ModuleDeps<never>;
  close(): Promise<void>;
}

async function openBackends(config: MeshConfig, logger: Logger, modules: readonly ServiceModule[]): Promise<Backends> {
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch((err: unknown) => logger.error({ err }, "error during shutdown"));
  };
  try {
    // Every registered module's migrations (a worker may run before any serving process did);
    // turns record events in the outbox, and the relay publishes them as in a serving process.
    const { depsOf } = await openMeshBackends({ config, logger, databaseModules: registered, streamModules: modules, closers });
    return {
      depsOf,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface WorkerPool {
  workers: readonly Worker[];
  close(): Promise<void>;
}

/**
 * `meshwork worker`: starts the pool workers every module declares. The jobs travel on JetStream,
 * so a NATS server is required (the in-process bus reaches no other process).
 */
export async function startWorkerPool(options: {
  config: MeshConfig;
  logger: Logger;
  modules?: readonly ServiceModule[];
}): Promise<WorkerPool> {
  const { config, logger } = options;
  const modules = (options.modules ?? registered).filter((m) => m.poolWorkers);
  if (modules.length === 0) throw new ConfigError("`meshwork worker`: no service declares pool workers.");
  if (!config.runtime.nats.url) {
    throw new ConfigError(
      "`meshwork worker` needs NATS_URL / Nats:Url: workers pull their jobs from a JetStream stream (Workers:Transport nats), which the in-process bus cannot share with other processes.",
    );
  }
  const backends = await openBackends(config, logger, modules);
  const workers: Worker[] = [];
  const close = async () => {
    for (const worker of [...workers].reverse())
      await worker.stop().catch((err: unknown) => logger.error({ err, worker: worker.name }, "error during shutdown"));
    await backends.close();
  };
  try {
    for (const module of modules) workers.push(...(await module.poolWorkers!(backends.depsOf(module))));
  } catch (err) {
    await close();
    throw err;
  }
  logger.info({ workers: workers.map((w) => w.name) }, "worker pool running");
  return { workers, close };
}

/** The task named `name` and its module, when a module declares one. */
export function findTask(name: string | undefined, modules: readonly ServiceModule[] = registered) {
  for (const module of modules) {
    const task = module.tasks?.find((t) => t.name === name);
    if (task) return { module, task: task as ModuleTask };
  }
  return undefined;
}

/** Runs one module task on the configured database and bus; answers its exit code. */
export async function runModuleTask(options: {
  config: MeshConfig;
  logger: Logger;
  module: ServiceModule;
  task: ModuleTask;
  options: Readonly<Record<string, string>>;
}): Promise<number> {
  options.task.check?.(options.options, options.config.get(options.module.settings));
  const backends = await openBackends(options.config, options.logger, [options.module]);
  try {
    return await options.task.run(options.options, backends.depsOf(options.module));
  } finally {
    await backends.close();
  }
}
