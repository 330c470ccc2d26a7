// The agent gateway (interface: shared/spec/agent-gateway-api.md), as a module the mesh can host.
// Its front listens on Gateway:Server:Port (18789) with `{ error: <reason phrase>, message }`
// errors and the policy of front-settings.ts (keys, rate limit, CORS). It serves agents (spawn,
// list, stop, turns with the tool-call loop through the provider pool), their sessions and the
// providers, the audit ring, chat channels and health; agents, sessions, turns and tool calls live
// in the mesh database, so every instance sees the same ones, and events go through the outbox to
// the stream AGENTS.
import { AgentService } from "../../gen/agents/v1/agent_pb.js";
import { GatewayEventService } from "../../gen/agents/v1/event_stream_pb.js";
import { HealthService } from "../../gen/agents/v1/health_pb.js";
import { ProviderService } from "../../gen/agents/v1/provider_pb.js";
import { SessionService } from "../../gen/agents/v1/session_pb.js";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { ConfigError } from "../runtime/config/index.js";
import { redactUrl } from "../runtime/database/index.js";
import { defineService } from "../runtime/host/index.js";
import { mcpRoute } from "./mcp/mcp-server.js";
import { createHubConnectionTokens, hubTokenKeys, hubTokenKeyTable } from "../runtime/hubs/index.js";
import { defineModule, type ModuleDeps, type Worker } from "../runtime/module/index.js";
import { createUnitOfWork } from "../runtime/outbox/index.js";
import { attachGateway, setChannelNotifier } from "../daemon/gateway-link.js";
import { GatewayUpdateAvailableSchema } from "../../gen/agents/v1/events_pb.js";
import { agentService, providerService, TurnGate } from "./agents/agent-service.js";
import { Agents } from "./agents/agents.js";
import { runTurn } from "./agents/turns.js";
import { AgentEntity } from "./agents/entities.js";
import { createProviderPool, pooledProviders } from "./agents/provider-setup.js";
import { type TelemetryProviders, type TurnInstruments, turnInstruments } from "./agents/turn-telemetry.js";
import { agentsStream } from "./agents-stream.js";
import { auditParts } from "./audit/module-parts.js";
import type { AuditLog } from "./audit/types.js";
import { channelsParts } from "./channels/module-parts.js";
import { createGatewayEventStream } from "./event-stream/gateway-event-service.js";
import { CredentialStore, credentialBackendsFromEnv, expandDataDir } from "./credentials/index.js";
import { AgentsCore0001 } from "./migrations/0001-core.js";
import { jobsParts } from "./tools/jobs/index.js";
import { memoryTasksParts } from "./tools/memory/module-parts.js";
import { SessionEntity, ToolCallEntity, TurnEntity } from "./sessions/entities.js";
import { agentsAuth, agentsFrontInterceptors, agentsFrontMigrations, agentsFrontPolicy } from "./front-settings.js";
import { type AgentHealth, agentHealthService, createAgentHealth } from "./health/index.js";
import { gatewayVersion } from "./health/health-service.js";
import { secretValuesOf } from "./tools/environment/index.js";
import { toolsParts } from "./tools/module-parts.js";
import { sessionService } from "./sessions/session-service.js";
import { type AgentTelemetry, createAgentTelemetry } from "./telemetry/agent-telemetry.js";
import { type AgentsSettings, agentsRenamedSettings, agentsSettings } from "./module-settings.js";
import { checkWorkersBus, startTurnQueue, startTurnWorker } from "./work/turn-queue.js";
import { namedAgent, readWorkflow, runWorkflow } from "./work/workflow-job.js";

export { type AgentsSettings, agentsSettings };

export { agentsStream };

/** The HMAC keys of hub connection tokens (/hubs/agent, /hubs/events), shared by every instance. */
const hubKeys = hubTokenKeyTable("agents_hub_token_key");

/**
 * Test seams: an AuditLog to record with instead of the ring (alongside it, for tests that read
 * what was audited), and tracer and meter providers in place of the Gateway:Telemetry ones.
 */
export interface AgentsWiring {
  audit?: AuditLog;
  telemetry?: TelemetryProviders;
}

export const agentsWiring: AgentsWiring = {};

export const agentsModule = defineModule({
  name: "agents",
  title: "agent gateway",
  settings: agentsSettings,
  renamedSettings: agentsRenamedSettings,
  services: [
    AgentService,
    SessionService,
    ProviderService,
    HealthService,
    GatewayEventService,
    ...auditParts.services,
    ...channelsParts.services,
    ...toolsParts.services,
  ],
  database: {
    name: "agents",
    entities: [
      AgentEntity,
      SessionEntity,
      TurnEntity,
      ToolCallEntity,
      hubKeys.entity,
      ...auditParts.entities,
      ...channelsParts.entities,
      ...memoryTasksParts.entities,
      ...jobsParts.entities,
      ...toolsParts.entities,
    ],
    migrations: [
      { name: "agents-0001-core", class: AgentsCore0001 },
      ...auditParts.migrations,
      ...channelsParts.migrations,
      ...agentsFrontMigrations,
      ...hubKeys.migrations.map((migration) => ({ name: "agents-0005-hub-token-keys", class: migration })),
      ...memoryTasksParts.migrations,
      ...jobsParts.migrations,
      ...toolsParts.migrations,
    ],
  },
  streams: [agentsStream],
  front: {
    name: "agents",
    title: "agent gateway REST front",
    port: (settings) => settings.gateway.server.port,
    errorStyle: ErrorStyle.REASON_PHRASE,
    jsonNaming: JsonNaming.LOWER_CAMEL,
    host: (settings) => settings.gateway.server.host,
    hostSetting: "Gateway:Server:Host",
    policy: agentsFrontPolicy,
    // The MCP server at /mcp: ToolService over streamable HTTP.
    routes: ({ settings, transport, logger }) => [
      mcpRoute({
        transport,
        logger,
        approvalTimeoutSeconds: () => settings.tools.approval.timeoutSeconds,
        trustClientConfirmation: () => settings.tools.mcp.trustClientConfirmation,
        version: gatewayVersion,
      }),
    ],
  },
  address: (settings) => settings.services.agents.address,
  // X-API-Key (gRPC x-api-key) of Gateway:Auth:ApiKeys, roles user < operator < admin.
  auth: agentsAuth,
  credentialSetting: "Gateway:Auth:Enabled with Gateway:Auth:ApiKeys",
  allowAnonymousPublicBind: {
    setting: "Gateway:Auth:AllowAnonymousPublicBind",
    value: (settings) => settings.gateway.auth.allowAnonymousPublicBind,
  },
  poolWorkers: agentPoolWorkers,
  tasks: [
    {
      name: "job",
      options: ["agent", "workflow"],
      usage: "--agent <name> --workflow <file>",
      description: "a workflow in one session of the agent AgentGateway:Agents:<name>; a JSON report, exit 0 or 1",
      check: (options, settings) => void checkWorkflowTask(options, settings),
      run: workflowTask,
    },
  ],
  async start(deps: ModuleDeps<AgentsSettings>) {
    const { settings } = deps;
    const defaultProvider = settings.gateway.agents.defaultProvider;
    const names = Object.keys(settings.providers);
    if (defaultProvider !== undefined && !names.includes(defaultProvider)) {
      throw new ConfigError(
        `Invalid setting Gateway:Agents:DefaultProvider = ${JSON.stringify(defaultProvider)}: expected the name of a provider under Providers (${names.length ? `configured: ${names.join(", ")}` : "none is configured"}).`,
      );
    }
    // Before anything starts: Workers:Enabled without NATS stops start-up naming both.
    if (settings.workers.enabled) checkWorkersBus(settings.workers, deps.bus);
    // What hot reload changes while running (the rate limit is read on every request).
    let live = settings;
    const { dataDir, providerSetup, pool, telemetry, uow, auditing, audit, tools, agents, turnSettings } = await startTurnCore(
      deps,
      () => live,
    );
    // Workers:Enabled: turns go to the worker pool (work/turn-queue.ts) instead of running here.
    const queue = settings.workers.enabled
      ? await startTurnQueue({ bus: deps.bus, settings: settings.workers, logger: deps.logger })
      : undefined;
    const turn = (agentId: string, message: string, signal?: AbortSignal) =>
      queue ? queue.run(agentId, message, signal) : runTurn(agents.deps, turnSettings, agentId, message, signal ? { signal } : {});
    // Holds new turns (REST, hub, channels, bridge) while app-daemon drains this process for an update.
    const drainRetryAfterSeconds = Math.ceil(settings.updates.drainTimeout / 1000) + 15;
    const gate = new TurnGate(drainRetryAfterSeconds);
    // Chat channels: a message runs a turn of its conversation's agent (channels/conversations.ts).
    const channels = await channelsParts.start(deps, {
      audit,
      settings: () => live.channels,
      drain: { draining: () => gate.draining, retryAfterSeconds: drainRetryAfterSeconds },
      agents: {
        spawn: (input) => agents.spawn(input),
        agentExists: async (id) => (await deps.db.reads.byId(AgentEntity, id)) !== null,
        runTurn: async (agentId, message) => {
          const release = gate.enter();
          try {
            return (await turn(agentId, message)).response;
          } finally {
            release();
          }
        },
      },
    });
    const { runtime, db } = deps;
    const health = createAgentHealth({
      activeAgents: () => db.em().count(AgentEntity, {}),
      providers: () => pool.list(),
      db,
      dbPath: runtime.database.url ? redactUrl(runtime.database.url) : `${runtime.data.dir}/pg`,
      dataDir,
      minFreeDiskBytes: settings.agentGateway.health.minFreeDiskMb * 1024 * 1024,
      maxHeapBytes: settings.agentGateway.health.maxHeapMb * 1024 * 1024,
    });
    // app-daemon's side (services/daemon/gateway-link.ts): its update checks record their event
    // here, and its drain holds new turns and fails readiness until the update is done or undone.
    // The bridge's conversations (app-daemon, Intercept mode): one agent each, spawned on its first message.
    const bridgedAgents = new Map<string, string>();
    // Updates:NotifyChannels: every conversation seen on a connected channel hears of a new release.
    const detachNotifier = setChannelNotifier(async (text) => void (await channels.notifyConversations(text)));
    const detachDaemon = attachGateway({
      announceUpdate: (update) => uow.run(async (tx) => void tx.record(GatewayUpdateAvailableSchema, update)),
      setDraining: (draining) => {
        gate.draining = draining;
      },
      turnsInFlight: () => gate.inFlight,
      idle: () => gate.idle(),
      audit: (action, resource, detail) => uow.run((tx) => audit.record(tx.em, { action, severity: "info", resource, detail })),
      chatTurn: async (conversation, text) => {
        const release = gate.enter();
        try {
          let agentId = bridgedAgents.get(conversation);
          if (agentId === undefined || !(await agents.list()).some((a) => a.id === agentId)) {
            agentId = (await agents.spawn({})).id;
            bridgedAgents.set(conversation, agentId);
          }
          return (await turn(agentId, text)).response;
        } finally {
          release();
        }
      },
    });
    const hubTokens = createHubConnectionTokens({ keys: hubTokenKeys({ db, table: hubKeys }) });
    const gatewayEvents = createGatewayEventStream({ bus: deps.bus, stream: agentsStream.name, logger: deps.logger, tokens: hubTokens });
    pool.start();
    const idle = agents.startIdleWorker();
    const jobs = await jobsParts.start({ db, tools: settings.tools, dataDir, logger: deps.logger });
    return {
      services: [
        defineService(AgentService, {
          ...agentService(
            agents,
            turnSettings,
            hubTokens,
            gate,
            queue && ((agentId, message, signal) => queue.run(agentId, message, signal)),
          ),
          // The web channel's SendMessage and ReceiveMessage on /hubs/agent (channels/web-hub.ts).
          sendWebChannelMessage: (req, ctx) => channels.webHub.sendWebChannelMessage(req, ctx),
          pushAgentHubCalls: (req, ctx) => channels.webHub.pushAgentHubCalls(req, ctx),
        }),
        defineService(SessionService, sessionService(deps.db)),
        defineService(ProviderService, providerService(agents)),
        agentHealthService(drainAware(health, gate)),
        defineService(GatewayEventService, gatewayEvents.impl),
        ...auditing.services,
        ...channels.services,
        ...tools.services,
      ],
      interceptors: agentsFrontInterceptors({ settings, db, logger: deps.logger, audit, rateLimit: () => live.gateway.rateLimit }),
      // Hot reload (appsettings files): Gateway:RateLimit:*, Providers:* and Gateway:Telemetry:*.
      async reload(next: AgentsSettings) {
        const before = live;
        live = next;
        if (JSON.stringify(before.providers) !== JSON.stringify(next.providers)) {
          pool.replace(pooledProviders(providerSetup(next)), next.gateway.agents.defaultProvider);
        }
        if (JSON.stringify(before.gateway.telemetry) !== JSON.stringify(next.gateway.telemetry)) {
          await telemetry.reconfigure(next.gateway.telemetry);
        }
      },
      workers: [
        {
          name: "app-daemon link",
          stop: async () => {
            detachNotifier();
            detachDaemon();
          },
        },
        { name: "agent gateway telemetry", stop: () => telemetry.shutdown() },
        ...(queue ? [{ name: "turn queue", stop: () => queue.stop() }] : []),
        ...channels.workers,
        { name: "gateway event stream", stop: () => gatewayEvents.stop() },
        { name: "provider pool", stop: () => pool.close() },
        { name: "idle agents", stop: () => idle.stop() },
        jobs,
        ...tools.workers,
      ],
    };
  },
});

/**
 * What a turn needs, built once per process (serving, `meshwork worker`, `meshwork job`): the
 * provider pool, telemetry, audit, the tool catalogue and the agents over the mesh database.
 */
async function startTurnCore(deps: ModuleDeps<AgentsSettings>, live: () => AgentsSettings = () => deps.settings) {
  const { settings } = deps;
  const dataDir = expandDataDir(settings.agentGateway.dataDir, process.cwd());
  const credentials = new CredentialStore({ dataDir, ...credentialBackendsFromEnv(process.env) });
  const providerSetup = (current: AgentsSettings) => ({
    providers: current.providers,
    agents: current.gateway.agents,
    gateway: current.agentGateway,
    credentials,
    logger: deps.logger,
  });
  const pool = createProviderPool(providerSetup(settings));
  const telemetry = createAgentTelemetry({
    settings: settings.gateway.telemetry,
    otelEnv: deps.otelEnv,
    serviceVersion: "0.1.0",
    logger: deps.logger,
  });
  const uow = createUnitOfWork(deps);
  const auditing = auditParts.start(deps, { capacity: settings.agentGateway.auditCapacity });
  const audit = alsoTo(auditing.ring, agentsWiring.audit);
  const instruments = agentsWiring.telemetry ? turnInstruments(agentsWiring.telemetry) : liveInstruments(telemetry);
  const tools = await toolsParts.start({
    db: deps.db,
    uow,
    logger: deps.logger,
    settings: settings.tools,
    dataDir,
    audit,
    instruments,
    pool,
    credentials,
    secrets: () => secretValuesOf(agentsSettings, live()),
    mcpServers: settings.MCP.servers,
  });
  const agents = new Agents({
    db: deps.db,
    uow,
    pool,
    audit,
    settings: settings.gateway.agents,
    logger: deps.logger,
    instruments,
    tools,
  });
  const turnSettings = {
    turnTimeout: settings.gateway.agents.turnTimeout,
    maxToolRounds: settings.agentGateway.maxToolRounds,
    providerProbeSeconds: settings.agentGateway.providerProbeSeconds,
  };
  /** The core's own background work, for a process that runs turns but serves nothing. */
  const workers: Worker[] = [
    { name: "agent gateway telemetry", stop: () => telemetry.shutdown() },
    { name: "provider pool", stop: () => pool.close() },
    ...tools.workers,
  ];
  return { dataDir, credentials, providerSetup, pool, telemetry, uow, auditing, audit, instruments, tools, agents, turnSettings, workers };
}

/** `meshwork worker`: the turn worker over a core of its own (work/turn-queue.ts). */
async function agentPoolWorkers(deps: ModuleDeps<AgentsSettings>): Promise<Worker[]> {
  const core = await startTurnCore(deps);
  core.pool.start();
  try {
    const worker = await startTurnWorker({
      bus: deps.bus,
      settings: deps.settings.workers,
      logger: deps.logger,
      run: (agentId, message) => runTurn(core.agents.deps, core.turnSettings, agentId, message),
    });
    return [...core.workers, worker];
  } catch (err) {
    for (const w of core.workers.reverse()) await w.stop().catch(() => undefined);
    throw err;
  }
}

/** The job's agent and workflow, read and checked before the database opens (exit 2 when bad). */
function checkWorkflowTask(options: Readonly<Record<string, string>>, settings: AgentsSettings) {
  const agentName = options.agent;
  const file = options.workflow;
  if (!agentName || !file) throw new ConfigError("`meshwork job` needs --agent <name> and --workflow <file>.");
  return { agentName, agent: namedAgent(settings.agentGateway.agents, agentName), workflow: readWorkflow(file) };
}

/** `meshwork job --agent <name> --workflow <file>`: prints the report, answers 0 or 1 (work/workflow-job.ts). */
async function workflowTask(options: Readonly<Record<string, string>>, deps: ModuleDeps<AgentsSettings>): Promise<number> {
  const { agentName, agent, workflow } = checkWorkflowTask(options, deps.settings);
  const core = await startTurnCore(deps);
  core.pool.start();
  try {
    const report = await runWorkflow({
      agents: core.agents,
      turnSettings: core.turnSettings,
      logger: deps.logger,
      agentName,
      agent,
      workflow,
    });
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return report.passed ? 0 : 1;
  } finally {
    for (const w of core.workers.reverse()) await w.stop().catch(() => undefined);
  }
}

/** While app-daemon drains, the report is Unhealthy (readiness 503) with the gateway entry saying why. */
function drainAware(health: AgentHealth, gate: TurnGate): AgentHealth {
  return {
    async report() {
      const report = await health.report();
      if (!gate.draining) return report;
      const gateway = report.entries.gateway;
      return {
        ...report,
        status: "Unhealthy",
        entries: {
          ...report.entries,
          ...(gateway ? { gateway: { ...gateway, status: "Unhealthy", description: "Draining for an update." } } : {}),
        },
      };
    },
  };
}

/** The ring, and a test's own log beside it. */
function alsoTo(ring: AuditLog, extra: AuditLog | undefined): AuditLog {
  if (!extra) return ring;
  return {
    async record(em, entry) {
      await ring.record(em, entry);
      await extra.record(em, entry);
    },
  };
}

/** The turn's tracers and instruments, read from the agent telemetry at each use, so a reconfigure (hot reload) takes effect. */
function liveInstruments(telemetry: AgentTelemetry): TurnInstruments {
  return {
    get agent() {
      return telemetry.tracer("App.Agent");
    },
    get providers() {
      return telemetry.tracer("App.Providers");
    },
    get tools() {
      return telemetry.tracer("App.Tools");
    },
    get turns() {
      return telemetry.instruments.turns;
    },
    get turnDuration() {
      return telemetry.instruments.turnDuration;
    },
    get tokens() {
      return telemetry.instruments.tokens;
    },
    get toolInvocations() {
      return telemetry.instruments.toolInvocations;
    },
    get providerErrors() {
      return telemetry.instruments.providerErrors;
    },
    get providerLatency() {
      return telemetry.instruments.providerLatency;
    },
  };
}
