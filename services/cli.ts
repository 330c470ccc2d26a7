// `meshwork`: parses the run mode, loads configuration, starts telemetry and the mesh, and shuts
// everything down on SIGINT/SIGTERM. A bad setting stops the process with a message naming it.
import { Console } from "node:console";
import { runCredentialsCommand } from "./agents/credentials/index.js";
import { loadMeshConfig, type MeshConfig, settingsText } from "./mesh-config.js";
import { modules } from "./registry.js";
import { ConfigError } from "./runtime/config/index.js";
import { createLogger } from "./runtime/logging/index.js";
import { type MeshMode, runModuleCommand, startMesh } from "./mesh.js";
import type { ModuleTask, ServiceModule } from "./runtime/module/index.js";
import { startMeshTelemetry } from "./mesh-telemetry.js";
import { findTask, runModuleTask, startWorkerPool } from "./mesh-pool.js";

const usage = `Usage: meshwork [mode] [--Section:Key=value ...]

Modes:
  all                 every service and every REST front in one process (default)
  serve <service>     one service on the service host (gRPC, gRPC-web, Connect); services: ${modules.map((m) => m.name).join(", ")}
  gateway             the REST fronts only, calling services over gRPC (Services:<Name>:Address)
  gateway restart     restarts the agent gateway installed as a service (app-daemon restart)
  worker              the pool workers services declare, pulling jobs from JetStream (needs NATS_URL);
                      replicas share the jobs through one durable consumer (Workers:*)
${modules.flatMap((m) => (m.tasks ?? []).map((t) => `  ${t.name} ${t.usage}\n${" ".repeat(22)}${t.description}`)).join("\n")}
  credentials ...     the agent gateway's credential store: set <name> (stdin), list, remove <name>, rotate;
                      no database, no mesh (meshwork credentials --help)

Commands (on the configured database):
${modules.flatMap((m) => (m.commands ?? []).map((c) => `  ${`${m.name} ${c.name} ${c.usage}`.padEnd(46)} ${c.description}`)).join("\n")}

Options:
  --environment <name>   picks appsettings.<name>.json (default Production; env MESHWORK_ENVIRONMENT,
                         then ASPNETCORE_ENVIRONMENT)
  --config-dir <dir>     where appsettings*.json are (default: the working directory; env MESHWORK_CONFIG_DIR)
  --help                 this text

Settings (flags --Key=value, environment Section__Key, or appsettings.json):
${settingsText()}
`;

interface CommandCall {
  module: ServiceModule;
  command: string;
  args: string[];
  flags: string[];
}

/** `meshwork <module> <command> [args] [--flags]`, when the first word names a module with commands. */
function parseCommand(args: string[]): CommandCall | undefined {
  const module = modules.find((m) => m.name === args[0] && m.commands?.length);
  if (!module) return undefined;
  const rest = args.slice(1);
  const flags = rest.filter((a) => a.startsWith("--"));
  const [command, ...commandArgs] = rest.filter((a) => !a.startsWith("--"));
  if (command === undefined)
    throw new ConfigError(`\`meshwork ${module.name}\` needs a command: ${module.commands!.map((c) => c.name).join(", ")}.`);
  return { module, command, args: commandArgs, flags };
}

function parseMode(args: string[]): { mode: MeshMode | { kind: "worker" }; flags: string[] } {
  const first = args[0];
  if (first === undefined || first.startsWith("--")) return { mode: { kind: "all" }, flags: args };
  if (first === "all") return { mode: { kind: "all" }, flags: args.slice(1) };
  if (first === "gateway") return { mode: { kind: "gateway" }, flags: args.slice(1) };
  if (first === "worker") return { mode: { kind: "worker" }, flags: args.slice(1) };
  if (first === "serve") {
    const name = args[1];
    if (!name || name.startsWith("--")) throw new ConfigError("`meshwork serve` needs a service name.");
    if (!modules.some((m) => m.name === name)) {
      throw new ConfigError(`Unknown service '${name}'. Known: ${modules.map((m) => m.name).join(", ")}.`);
    }
    return { mode: { kind: "service", name }, flags: args.slice(2) };
  }
  throw new ConfigError(`Unknown mode '${first}'.`);
}

/** What `app-daemon run` learns of the mesh it runs: when it is up and when it starts to stop. */
export interface MeshLifecycle {
  /** Every front listens; `fronts` are their names and base URLs. */
  up?(fronts: readonly { name: string; url: string }[]): void;
  /** SIGTERM or SIGINT: before the mesh closes. */
  stopping?(): void | Promise<void>;
}

/** `meshwork <argv>` (bin/meshwork.js, and `app-daemon run`). */
export async function main(argv: string[], lifecycle: MeshLifecycle = {}): Promise<void> {
  if (argv[0] === "gateway" && argv[1] === "restart") {
    // The agent gateway installed as a service: the same as `app-daemon restart`.
    const { daemonMain } = await import("./daemon/cli.js");
    await daemonMain(["restart", ...argv.slice(2)]);
    return;
  }
  if (argv[0] === "credentials") {
    process.exitCode = await runCredentialsCommand(argv.slice(1), modules);
    return;
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(usage);
    return;
  }
  const task = findTask(argv[0], modules);
  if (task) {
    await runTask(task.module, task.task, argv.slice(1));
    // A batch run ends here, whatever a library may still hold open (stdout is written synchronously).
    process.exit(process.exitCode ?? 0);
  }
  const call = (() => {
    try {
      return parseCommand(argv);
    } catch (err) {
      if (err instanceof ConfigError) {
        process.stderr.write(`meshwork: ${err.message}\n`);
        process.exit(2);
      }
      throw err;
    }
  })();
  if (call) {
    await runCommand(call);
    return;
  }
  let mode: MeshMode | { kind: "worker" };
  let config: MeshConfig;
  try {
    const parsed = parseMode(argv);
    mode = parsed.mode;
    config = loadMeshConfig({ flags: parsed.flags });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`meshwork: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }

  const logger = createLogger({ level: config.runtime.logging.level });
  const telemetry = await startMeshTelemetry(config, logger);
  const started = mode.kind === "worker" ? startWorkerPool({ config, logger }) : startMesh({ config, logger, mode });
  const mesh = await (started as Promise<{ fronts?: Awaited<ReturnType<typeof startMesh>>["fronts"]; close(): Promise<void> }>).catch(
    async (err: unknown) => {
      if (err instanceof ConfigError) {
        // Settings that only make sense together (keys and bind addresses) are checked at start.
        process.stderr.write(`meshwork: ${err.message}\n`);
        await telemetry.shutdown();
        process.exit(2);
      }
      logger.fatal({ err }, "meshwork failed to start");
      await telemetry.shutdown();
      process.exit(1);
    },
  );
  logger.info({ mode: mode.kind, environment: config.environment }, "meshwork is up");
  lifecycle.up?.((mesh.fronts ?? []).map(({ name, url }) => ({ name, url })));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    await lifecycle.stopping?.();
    await mesh.close();
    await telemetry.shutdown();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

async function runCommand(call: CommandCall): Promise<void> {
  try {
    const config = loadMeshConfig({ flags: call.flags });
    // Commands print their answer; the log says only what went wrong.
    const logger = createLogger({ level: "warn" });
    process.stdout.write(`${await runModuleCommand({ config, logger, module: call.module, command: call.command, args: call.args })}\n`);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`meshwork: ${err.message}\n`);
      process.exit(2);
    }
    // Not the error's text: a database error can quote bound values (an e-mail, say).
    process.stderr.write(`meshwork: ${call.module.name} ${call.command} failed (${err instanceof Error ? err.name : "error"}).\n`);
    process.exit(1);
  }
}

/**
 * `meshwork <task> --option value ... [--Section:Key=value ...]`: a module's own run mode. Its
 * options are taken off the command line; the rest are settings flags. Exit code: the task's; 2
 * for bad arguments or settings.
 */
async function runTask(module: ServiceModule, task: ModuleTask, args: string[]): Promise<void> {
  const options: Record<string, string> = {};
  const flags: string[] = [];
  let telemetry: Awaited<ReturnType<typeof startMeshTelemetry>> | undefined;
  try {
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!;
      const [flag, inline] = arg.startsWith("--")
        ? [arg.slice(2).split("=")[0]!, arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined]
        : [""];
      const option = task.options.find((o) => o === flag);
      if (option === undefined) {
        if (!arg.startsWith("--"))
          throw new ConfigError(`\`meshwork ${task.name}\`: unexpected argument '${arg}' (usage: meshwork ${task.name} ${task.usage}).`);
        flags.push(arg);
        continue;
      }
      const value = inline ?? args[++i];
      if (value === undefined || value === "" || (inline === undefined && value.startsWith("--")))
        throw new ConfigError(`\`meshwork ${task.name}\`: --${option} needs a value (usage: meshwork ${task.name} ${task.usage}).`);
      options[option] = value;
    }
    const config = loadMeshConfig({ flags });
    // stdout holds the task's answer alone: the log, and console exporters' spans, go to stderr.
    const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
    for (const method of ["log", "info", "debug", "dir", "table"] as const) console[method] = toStderr[method].bind(toStderr);
    const logger = createLogger({ level: "warn", destination: process.stderr });
    telemetry = await startMeshTelemetry(config, logger);
    process.exitCode = await runModuleTask({ config, logger, module, task, options });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`meshwork: ${err.message}\n`);
      process.exitCode = 2;
    } else {
      // Not the error's text: a database error can quote bound values.
      process.stderr.write(`meshwork: ${task.name} failed (${err instanceof Error ? err.name : "error"}).\n`);
      process.exitCode = 1;
    }
  } finally {
    await telemetry?.shutdown();
  }
}
