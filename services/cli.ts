// `meshwork`: parses the run mode, loads configuration, starts telemetry and the mesh, and shuts
// everything down on SIGINT/SIGTERM. A bad setting stops the process with a message naming it.
import { runCredentialsCommand } from "./agents/credentials/index.js";
import { loadMeshConfig, type MeshConfig, settingsText } from "./mesh-config.js";
import { modules } from "./registry.js";
import { ConfigError } from "./runtime/config/index.js";
import { createLogger } from "./runtime/logging/index.js";
import { type MeshMode, runModuleCommand, startMesh } from "./mesh.js";
import type { ServiceModule } from "./runtime/module/index.js";
import { startMeshTelemetry } from "./mesh-telemetry.js";

const usage = `Usage: meshwork [mode] [--Section:Key=value ...]

Modes:
  all                 every service and every REST front in one process (default)
  serve <service>     one service on the service host (gRPC, gRPC-web, Connect); services: ${modules.map((m) => m.name).join(", ")}
  gateway             the REST fronts only, calling services over gRPC (Services:<Name>:Address)
  gateway restart     restarts the agent gateway installed as a service (app-daemon restart)
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

function parseMode(args: string[]): { mode: MeshMode; flags: string[] } {
  const first = args[0];
  if (first === undefined || first.startsWith("--")) return { mode: { kind: "all" }, flags: args };
  if (first === "all") return { mode: { kind: "all" }, flags: args.slice(1) };
  if (first === "gateway") return { mode: { kind: "gateway" }, flags: args.slice(1) };
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
  let mode: MeshMode;
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
  const mesh = await startMesh({ config, logger, mode }).catch(async (err: unknown) => {
    if (err instanceof ConfigError) {
      // Settings that only make sense together (keys and bind addresses) are checked at start.
      process.stderr.write(`meshwork: ${err.message}\n`);
      await telemetry.shutdown();
      process.exit(2);
    }
    logger.fatal({ err }, "meshwork failed to start");
    await telemetry.shutdown();
    process.exit(1);
  });
  logger.info({ mode: mode.kind, environment: config.environment }, "meshwork is up");
  lifecycle.up?.(mesh.fronts.map(({ name, url }) => ({ name, url })));

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
