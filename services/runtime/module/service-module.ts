// The contract between a bounded context (services/<name>) and the process that hosts it. A module
// declares everything about its service: its settings, the RPC services it serves, what it stores,
// its event streams, the REST front that shows it, how callers prove who they are, the work it
// runs in the background, and which of its spans are few enough to print on a console. The runtime
// offers the mechanisms and names no service.
import type { DescService } from "@bufbuild/protobuf";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Interceptor, Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { ErrorStyle, JsonNaming } from "../../../gen/meshwork/api/v1/options_pb.js";
import type { ApiKeyStore, BearerVerifier, RoleRanking } from "../auth/index.js";
import type { EventBus, StreamDefinition } from "../bus/index.js";
import type { RuntimeSettings, SettingsOf, SettingsSchema } from "../config/index.js";
import type { Database, DatabaseModule } from "../database/index.js";
import type { ServiceRegistration } from "../host/index.js";

export interface ModuleDeps<Settings = unknown> {
  /** The module's own settings, typed by its schema. */
  settings: Settings;
  /** The mesh's settings (database, bus, fronts, ...), for modules that report them. */
  runtime: RuntimeSettings;
  environment: string;
  /** The standard OTEL_* variables, for a module that runs telemetry of its own. */
  otelEnv: Readonly<Record<string, string>>;
  db: Database;
  bus: EventBus;
  /** Wakes the outbox relay after a commit that recorded events. */
  outbox: { notify(): void };
  logger: Logger;
}

/** The REST front that shows a module's services: its own listener, naming and error style. */
export interface FrontDeclaration<Settings> {
  /** Shown in logs and used by tests (`frontUrl("orders")`). */
  name: string;
  /** What the front serves, for the start-up line (e.g. "order REST front (/api)"). */
  title: string;
  /** Its port, from the module's settings. */
  port(settings: Settings): number;
  /** Its bind address when the module documents its own; unset: Fronts:Host. */
  host?(settings: Settings): string | undefined;
  /** The settings named in a refusal to bind an open API publicly. */
  hostSetting?: string;
  /** Style of the answers the gateway makes itself (404, 405, 413, ...); methods use their service's option. */
  errorStyle: ErrorStyle;
  jsonNaming: JsonNaming;
  /** Cross-origin access, the client's address behind proxies and the request log of the front. */
  policy?(settings: Settings): FrontPolicy;
  /**
   * Paths the front serves with a protocol of their own (an MCP endpoint): each reaches the
   * module's services through `transport`, as the REST routes do, wherever they run.
   */
  routes?(deps: FrontRouteDeps<Settings>): readonly FrontRoute[];
}

export interface FrontRouteDeps<Settings> {
  settings: Settings;
  /** The front's transport to the module's services (in-process, or gRPC to their host). */
  transport: Transport;
  logger: Logger;
}

/**
 * A protocol of its own served at one path of a front (an MCP endpoint, say), declared by a module:
 * the front hands it every request for that exact path (any method, any query) and translates
 * nothing. It reaches its service through the same transport as the REST routes.
 */
export interface FrontRoute {
  /** The exact path, e.g. "/mcp". */
  readonly path: string;
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Ends its open exchanges when the front closes. */
  close?(): Promise<void> | void;
}

/** What a front does for every request beyond translating it, as its module configures it. */
export interface FrontPolicy {
  /** CORS: preflights answered by the front, allowed origins told so. Unset: no CORS headers. */
  cors?: {
    allowedOrigins?: readonly string[];
    allowedMethods?: readonly string[];
    allowCredentials?: boolean;
  };
  /** X-Forwarded-For is believed from these proxies (CIDRs) when forwardedHeaders is on. */
  clientAddress?: { forwardedHeaders: boolean; trustedProxies: readonly string[] };
  /** A log line per request with the caller's key name and the client address. */
  verbose?: boolean;
}

/** How a module's callers prove who they are; the one auth interceptor enforces the contract with it. */
export interface ModuleAuth {
  /** API keys (`X-Api-Key`, gRPC `x-api-key`) and the roles they carry, lowest first. */
  apiKeys?: { store: ApiKeyStore; roles: RoleRanking };
  /** Bearer tokens (`Authorization: Bearer`). */
  bearer?: BearerVerifier;
}

/** What a module tells telemetry about its own instruments. */
export interface ModuleTelemetry {
  /**
   * Instrumentation scope names (the names its tracers are created with) whose spans are few
   * enough to print on the console exporter: one per user-visible unit of work (an agent turn, a
   * tool call, a provider call), never one per RPC or per record. Under the default
   * `Telemetry:ConsoleSpans=modules` the console prints the spans of these scopes and no others;
   * OTLP and Zipkin export every span whatever is declared here.
   */
  consoleSpanScopes?: readonly string[];
}

/** What a module's command is given: its settings and the configured database, nothing served. */
export interface CommandDeps<Settings = unknown> {
  settings: Settings;
  db: Database;
  /** Wakes nothing: events the command records wait in the outbox for the next relay. */
  outbox: { notify(): void };
  logger: Logger;
}

/** An administrative command, run as `meshwork <module> <name> [args]` on the configured database. */
export interface ModuleCommand<Settings = unknown> {
  name: string;
  /** The arguments as the help shows them, e.g. "EMAIL user|admin". */
  usage: string;
  description: string;
  /** Answers the line to print; a ConfigError for bad arguments (exit code 2). */
  run(args: readonly string[], deps: CommandDeps<Settings>): Promise<string>;
}

/**
 * A run mode of a module's own (`meshwork job --agent a --workflow f`): it gets the mesh's
 * database and bus as `start` does, serves nothing, and answers the process's exit code.
 */
export interface ModuleTask<Settings = unknown> {
  /** The first word on the command line. */
  name: string;
  /** Its value options (`agent` for `--agent <value>`), taken off the command line before the settings flags. */
  options: readonly string[];
  /** The arguments as the help shows them, e.g. "--agent <name> --workflow <file>". */
  usage: string;
  description: string;
  /** Checks the options against the settings before anything opens; a ConfigError (exit code 2) for bad ones. */
  check?(options: Readonly<Record<string, string>>, settings: Settings): void;
  /** Answers the exit code; a ConfigError for bad arguments (exit code 2, its message on stderr). */
  run(options: Readonly<Record<string, string>>, deps: ModuleDeps<Settings>): Promise<number>;
}

/** Background work with a start and a stop (relays, schedulers, durable consumers). */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

export interface ServiceModule<S extends SettingsSchema = SettingsSchema> {
  /** Also the name used on the command line: `meshwork serve <name>`. */
  name: string;
  /** For people: "order handling". */
  title: string;
  /** The module's settings: a schema of `setting.*` leaves under its own sections. */
  settings: S;
  /** Old setting names of this module's that stop start-up with a message naming the new one. */
  renamedSettings?: Readonly<Record<string, string>>;
  /** The RPC services, read by gateways even when the implementation runs elsewhere. */
  services: readonly DescService[];
  database: DatabaseModule;
  /** The JetStream streams its events travel on (subjects are stated on the event messages). */
  streams: readonly StreamDefinition[];
  front: FrontDeclaration<SettingsOf<S>>;
  /** Where a gateway-only process reaches the services (gRPC over HTTP/2): one address or several, comma-separated. */
  address(settings: SettingsOf<S>): string;
  /**
   * The credentials its callers may present. Built before anything opens, so a bad key stops
   * start-up; a module with no credential configured serves an open API (loopback only).
   */
  auth(settings: SettingsOf<S>): ModuleAuth;
  /** The setting that configures those credentials, named when an open API would bind publicly. */
  credentialSetting?: string;
  /**
   * A setting of the module's own that lets its open API bind publicly (besides the mesh's
   * Auth:AllowAnonymousPublicBind), named in the refusal.
   */
  allowAnonymousPublicBind?: { setting: string; value(settings: SettingsOf<S>): boolean };
  /** Its instruments as telemetry should treat them (the console's low-volume span scopes). */
  telemetry?: ModuleTelemetry;
  /** Builds the handlers and starts the module's workers. */
  start(deps: ModuleDeps<SettingsOf<S>>): Promise<ModuleRuntime<SettingsOf<S>>>;
  /** Administrative commands (`meshwork <module> <command> ...`). */
  commands?: readonly ModuleCommand<SettingsOf<S>>[];
  /**
   * `meshwork worker`: the work the module takes from a shared queue, started with the mesh's
   * database and bus (nothing served). Every replica of the pool runs the same workers and they
   * compete for the jobs.
   */
  poolWorkers?(deps: ModuleDeps<SettingsOf<S>>): Promise<Worker[]>;
  /** Run modes of its own (`meshwork <task> ...`). */
  tasks?: readonly ModuleTask<SettingsOf<S>>[];
}

export interface ModuleRuntime<Settings = unknown> {
  services: ServiceRegistration[];
  /**
   * Run around the module's own services, outermost first, outside the auth interceptor: they see
   * every call, the ones auth refuses included (a per-caller rate limit, an audit of refusals).
   */
  interceptors?: Interceptor[];
  /** Background work, stopped in reverse order before the database and bus close. */
  workers?: Worker[];
  /**
   * Takes settings changed in the appsettings files while running: called with the module's whole
   * settings when one of its `reloadable` settings changed (the others keep their start-up values).
   */
  reload?(settings: Settings): Promise<void> | void;
}

/** Checks a module against its own settings type; the registry holds them untyped. */
export function defineModule<S extends SettingsSchema>(module: ServiceModule<S>): ServiceModule {
  return module as unknown as ServiceModule;
}

/** Whether a credential is configured: an API key, or a bearer verifier (a bearer-only front is protected). */
export function isProtected(auth: ModuleAuth): boolean {
  return (auth.apiKeys?.store.size ?? 0) > 0 || auth.bearer !== undefined;
}
