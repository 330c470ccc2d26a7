// The agent gateway's own settings (interface: the Configuration table of agent-gateway-api.md):
// agents (Gateway:Agents:*), the gateway's local directory and provider tuning (AgentGateway:*),
// the model providers (Providers:<name>:*), update checks (Updates:*) and remote tool servers
// (MCP:Servers), the chat channels (Channels:<Type>:*) and the turn worker pool (Workers:*). The front's own settings (Gateway:Server, Auth, RateLimit, Cors, Telemetry) are
// declared beside these in index.ts. A bad value stops start-up (exit 2) naming the setting.
import { isIP } from "node:net";
import { z } from "zod";
import { ConfigError, setting } from "../runtime/config/index.js";
import { bridgeSettings, daemonSettings } from "../daemon/settings.js";
import { toolsSettings } from "./tools/settings.js";

export type ProviderKindSetting = "openai" | "assistant";

/** One `Providers:<name>:*` entry, checked. */
export interface ProviderSettings {
  kind: ProviderKindSetting;
  /** `openai`: the API base, ending `/v1`. */
  baseUrl?: string;
  apiKey?: string;
  /** The first is the provider's default. */
  models: string[];
  priority: number;
  tokenExchangeUrl?: string;
  oauthToken?: string;
  tokenFilePath?: string;
  oauthTokenPrefix: string;
  editorVersion?: string;
  dangerouslyDisableSslValidation: boolean;
}

const providerFields = [
  "Kind",
  "BaseUrl",
  "ApiKey",
  "Models",
  "Priority",
  "TokenExchangeUrl",
  "OAuthToken",
  "TokenFilePath",
  "OAuthTokenPrefix",
  "EditorVersion",
  "DangerouslyDisableSslValidation",
] as const;

function httpUrl(value: unknown): URL | undefined {
  if (typeof value !== "string") return undefined;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}

function modelsOf(value: unknown): string[] | undefined {
  let items: unknown = value;
  if (typeof value === "string") {
    const text = value.trim();
    if (text.startsWith("[")) {
      try {
        items = JSON.parse(text);
      } catch {
        return undefined;
      }
    } else items = text.split(",");
  }
  if (!Array.isArray(items)) return undefined;
  const models = items.map((m) => (typeof m === "string" ? m.trim() : undefined));
  if (models.some((m) => !m)) return undefined;
  return models as string[];
}

function parseProvider(
  _name: string,
  fields: Readonly<Record<string, unknown>>,
  fail: (field: string, expected: string) => never,
): ProviderSettings {
  const text = (field: string): string | undefined => {
    const value = fields[field];
    if (value === undefined) return undefined;
    if (typeof value !== "string" && typeof value !== "number") return fail(field, "a string");
    return String(value);
  };
  const kind = (text("Kind") ?? "openai").toLowerCase();
  if (kind !== "openai" && kind !== "assistant") return fail("Kind", "openai or assistant");
  const baseUrl = text("BaseUrl");
  if (baseUrl !== undefined && !(httpUrl(baseUrl) && /\/v1\/?$/.test(new URL(baseUrl).pathname))) {
    fail("BaseUrl", "an http(s) URL ending /v1");
  }
  if (kind === "openai" && baseUrl === undefined) fail("BaseUrl", "an http(s) URL ending /v1 (an openai provider needs one)");
  const models = fields.Models === undefined ? undefined : modelsOf(fields.Models);
  if (!models || models.length === 0)
    fail("Models", "one model or more (a JSON array, Models:0, or comma-separated); the first is the default");
  const priorityText = text("Priority");
  const priority = priorityText === undefined ? 100 : Number(priorityText);
  if (!Number.isInteger(priority) || priority < 0 || priority > 1_000_000) fail("Priority", "an integer from 0 to 1000000");
  const tokenExchangeUrl = text("TokenExchangeUrl");
  if (tokenExchangeUrl !== undefined && !httpUrl(tokenExchangeUrl)) fail("TokenExchangeUrl", "an http(s) URL");
  if (kind === "assistant" && tokenExchangeUrl === undefined) fail("TokenExchangeUrl", "an http(s) URL (an assistant provider needs one)");
  const editorVersion = text("EditorVersion");
  if (editorVersion !== undefined && !/^[^/\s]+\/[^/\s]+$/.test(editorVersion)) fail("EditorVersion", "<editor>/<version>");
  const insecure = text("DangerouslyDisableSslValidation") ?? "false";
  if (!/^(true|false)$/i.test(insecure)) fail("DangerouslyDisableSslValidation", "true or false");
  return {
    kind,
    baseUrl: baseUrl?.replace(/\/$/, ""),
    apiKey: text("ApiKey"),
    models: models!,
    priority,
    tokenExchangeUrl,
    oauthToken: text("OAuthToken"),
    tokenFilePath: text("TokenFilePath"),
    oauthTokenPrefix: text("OAuthTokenPrefix") ?? "gho_",
    editorVersion,
    dangerouslyDisableSslValidation: insecure.toLowerCase() === "true",
  };
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "");
  if (LOOPBACK_NAMES.has(host.toLowerCase())) return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

export interface McpServerSettings {
  name: string;
  endpoint: string;
  transport?: string;
  apiKey?: string;
}

export const gatewayAgentsSettings = z.object({
  maxConcurrentAgents: setting.int({
    min: 1,
    max: 100_000,
    default: 10,
    description: "Agents running at once, on every instance together; one more spawn answers 429.",
  }),
  defaultProvider: setting.string({
    description: "Provider of agents spawned without one (a name under Providers). Unset: the first available provider by Priority.",
  }),
  defaultModel: setting.string({
    description: "Model of agents spawned without one, when the provider lists it. Unset: the provider's first model.",
  }),
  idleTimeout: setting.timeSpan({
    min: 1,
    default: "01:00:00",
    description: "An agent without a turn for this long becomes Idle; after as long again it is stopped (reason idle).",
  }),
  turnTimeout: setting.timeSpan({
    min: 1,
    default: "00:05:00",
    description: "Longest turn; past it the provider request is aborted and the call answers 504.",
  }),
});

/** One `AgentGateway:Agents:<name>:*` entry: an agent a workflow job runs with (`meshwork job --agent <name>`). */
export interface NamedAgentSettings {
  provider?: string;
  model?: string;
  systemPrompt?: string;
}

export const namedAgentsSetting = setting.map({
  description:
    "Agents named for `meshwork job --agent <name>`: `AgentGateway:Agents:<name>:<Field>` with Provider (a name under Providers; unset: Gateway:Agents:DefaultProvider), Model (unset: Gateway:Agents:DefaultModel, else the provider's first) and SystemPrompt.",
  fields: ["Provider", "Model", "SystemPrompt"],
  parse: (_name, fields, fail): NamedAgentSettings => {
    const text = (field: string): string | undefined => {
      const value = fields[field];
      if (value === undefined) return undefined;
      if (typeof value !== "string") return fail(field, "a string");
      return value;
    };
    return { provider: text("Provider"), model: text("Model"), systemPrompt: text("SystemPrompt") };
  },
});

/** Workers:*: the worker pool that runs the agents service's turns (`meshwork worker`). */
export const workersSettings = z.object({
  enabled: setting.bool({
    default: false,
    description:
      "The agents service queues its turns on the Workers:StreamKey stream for `meshwork worker` processes instead of running them itself; a turn waits there while no worker runs. Needs NATS (NATS_URL).",
  }),
  transport: setting.enum(["nats"], {
    default: "nats",
    description: "How turn jobs travel to the workers: nats (a JetStream stream and a durable pull consumer); the only one.",
  }),
  streamKey: setting.string({
    default: "AGENT_WORK",
    description: "The JetStream stream of turn jobs and their replies (subjects `<StreamKey>.turns`, `<StreamKey>.replies.>`).",
  }),
  consumerGroup: setting.string({
    default: "agent-workers",
    description: "The durable consumer every worker pulls through: each job goes to one of them.",
  }),
});

export type WorkersSettings = z.output<typeof workersSettings>;

export const agentGatewaySettings = z.object({
  agents: namedAgentsSetting,
  dataDir: setting.string({
    default: "~/.app",
    description:
      "The agent gateway's local directory: credentials/ holds the encrypted credential store. A leading ~ is the home directory.",
  }),
  apiKey: setting.string({
    secret: true,
    flags: ["api-key"],
    description:
      "Key of the default provider for this run only (the `--api-key` flag); never stored. Wins over the provider's ApiKey and `<NAME>_API_KEY`.",
  }),
  providerRetryBaseMs: setting.int({
    min: 0,
    max: 600_000,
    default: 2000,
    description: "Backoff before retry n (from 0) of a provider call that failed with a 5xx or a socket error: this × 2^n (3 retries).",
  }),
  providerProbeSeconds: setting.int({
    min: 1,
    max: 86_400,
    default: 30,
    description: "How often every provider is probed (`GET …/models`); a failed provider is skipped until a probe succeeds.",
  }),
  auditCapacity: setting.int({
    min: 1,
    max: 10_000_000,
    default: 10_000,
    description: "Audit events kept (a ring in the mesh database, oldest dropped).",
  }),
  maxToolRounds: setting.int({
    min: 1,
    max: 1000,
    default: 25,
    description: "Most tool-call rounds in one turn; the reply of the last round is the turn's answer.",
  }),
  health: z.object({
    minFreeDiskMb: setting.int({
      min: 0,
      max: 100_000_000,
      default: 100,
      description: "The disk_space health entry is Degraded below this much free space in DataDir (MB).",
    }),
    maxHeapMb: setting.int({
      min: 1,
      max: 1_000_000,
      default: 1024,
      description: "The memory health entry is Degraded above this heap use (MB).",
    }),
  }),
});

export const providersSetting = setting.map({
  description:
    "Model providers, one entry per name: `Providers:<name>:<Field>` (`Providers__<name>__<Field>`; Models also as `Models:0`, a JSON array or comma-separated). Fields: Kind (openai or assistant, default openai), BaseUrl (ending /v1), ApiKey (else `<NAME>_API_KEY`, else the credential `provider.<name>`), Models (the first is the default), Priority (lower first, 100); assistant: TokenExchangeUrl, OAuthToken (else `ASSISTANT_TOKEN`), TokenFilePath, OAuthTokenPrefix (gho_), EditorVersion, DangerouslyDisableSslValidation.",
  fields: providerFields,
  envFields: { ApiKey: "{NAME}_API_KEY", OAuthToken: "ASSISTANT_TOKEN" },
  secretFields: ["ApiKey", "OAuthToken"],
  parse: parseProvider,
  reloadable: true,
});

export const updatesSettings = z.object({
  checkInterval: setting.timeSpan({ min: 1000, default: "24:00:00", description: "How often the gateway checks for a newer release." }),
  autoApply: setting.bool({ default: false, description: "Apply a newer release without asking." }),
  notifyChannels: setting.bool({ default: true, description: "Tell connected channels when a newer release is found." }),
  preRelease: setting.bool({ default: false, description: "Count pre-release versions as newer releases." }),
  drainTimeout: setting.timeSpan({ default: "00:00:30", description: "How long an update waits for in-flight work." }),
  packageId: setting.string({ default: "app-daemon", description: "The package whose releases are checked." }),
  packageFeedUrl: setting.url({
    protocols: ["https:", "http:"],
    default: "https://registry.npmjs.org/",
    description: "The package feed releases are read from (an npm registry).",
  }),
  feedToken: setting.string({ secret: true, description: "Sent as `Authorization: Bearer` to the package feed." }),
  installPrefix: setting.string({
    description: "`app-daemon update` installs with `npm install --global --prefix <this>`; unset: npm's own global prefix.",
  }),
});

export const mcpSettings = z.object({
  servers: setting.list({
    description: "Remote tool servers, opt-in: [{ Name, Endpoint, Transport, ApiKey }]. Endpoint must be https (http only on loopback).",
    secret: true,
    fields: [
      { name: "Name", required: true },
      { name: "Endpoint", required: true },
      { name: "Transport" },
      { name: "ApiKey", secret: true },
    ],
    map: (item): McpServerSettings => {
      const server = { name: item.Name!, endpoint: item.Endpoint!, transport: item.Transport, apiKey: item.ApiKey };
      checkMcpServer(server);
      return server;
    },
  }),
});

/** An MCP:Servers endpoint: https, or http on loopback only. Throws a ConfigError (exit 2) naming the server. */
function checkMcpServer(server: McpServerSettings): void {
  const url = httpUrl(server.endpoint);
  if (!url || (url.protocol === "http:" && !isLoopbackHost(url.hostname))) {
    throw new ConfigError(
      `Invalid setting MCP:Servers (server ${JSON.stringify(server.name)}) Endpoint = ${JSON.stringify(server.endpoint)}: expected an https URL (http only on a loopback host).`,
    );
  }
}

/** The fields every chat channel has: AutoConnect, AllowFrom, Provider, Model. */
function channelFields(name: string, autoConnect: boolean) {
  return {
    autoConnect: setting.bool({
      default: autoConnect,
      description: `The state the ${name} channel starts in the first time the gateway runs with it configured; after that its last connect or disconnect stands, across restarts.`,
    }),
    allowFrom: setting.string({
      reloadable: true,
      description: `Comma-separated ${name} sender ids whose messages run a turn; unset: everyone. Other senders' messages are ignored and audited (channel.message.denied).`,
    }),
    provider: setting.string({
      reloadable: true,
      description: `Provider of the agents ${name} conversations spawn (a name under Providers). Unset: Gateway:Agents:DefaultProvider.`,
    }),
    model: setting.string({
      reloadable: true,
      description: `Model of the agents ${name} conversations spawn. Unset: Gateway:Agents:DefaultModel, else the provider's first.`,
    }),
  };
}

export const channelsSettings = z.object({
  web: z.object(channelFields("web", true)),
  telegram: z.object({
    ...channelFields("Telegram", false),
    botToken: setting.string({ secret: true, description: "The Telegram bot's token (from @BotFather); required to connect." }),
    apiBaseUrl: setting.url({
      protocols: ["https:", "http:"],
      default: "https://api.telegram.org",
      description: "The Telegram Bot API's base URL (`<base>/bot<token>/<method>`).",
    }),
    pollTimeoutSeconds: setting.int({
      min: 0,
      max: 600,
      default: 30,
      description: "The long poll's timeout (getUpdates `timeout`); the gateway reconnects 3 s after a lost poll.",
    }),
  }),
  slack: z.object({
    ...channelFields("Slack", false),
    botToken: setting.string({ secret: true, description: "The Slack app's bot token (xoxb-…); required to connect." }),
    appToken: setting.string({ secret: true, description: "The Slack app-level token (xapp-…, Socket Mode); required to connect." }),
    apiBaseUrl: setting.url({
      protocols: ["https:", "http:"],
      default: "https://slack.com/api",
      description: "The Slack Web API's base URL.",
    }),
  }),
  discord: z.object({
    ...channelFields("Discord", false),
    botToken: setting.string({ secret: true, description: "The Discord bot's token; required to connect." }),
    apiBaseUrl: setting.url({
      protocols: ["https:", "http:"],
      default: "https://discord.com/api/v10",
      description: "The Discord REST API's base URL.",
    }),
  }),
  signal: z.object({
    ...channelFields("Signal", false),
    baseUrl: setting.url({
      protocols: ["https:", "http:"],
      description: "The signal-cli HTTP daemon (`signal-cli daemon --http`), e.g. http://127.0.0.1:8080; required to connect.",
    }),
    account: setting.string({
      description: "The Signal account (phone number) signal-cli sends as, e.g. +15550001111; required to connect.",
    }),
  }),
});

export type ChannelsSettings = z.output<typeof channelsSettings>;

/** The sections of the agent gateway's settings other than the front's own. */
export const agentsCoreSections = {
  agentGateway: agentGatewaySettings,
  providers: providersSetting,
  updates: updatesSettings,
  MCP: mcpSettings,
  tools: toolsSettings,
  daemon: daemonSettings,
  channels: channelsSettings,
  bridge: bridgeSettings,
  workers: workersSettings,
};

export type GatewayAgentsSettings = z.output<typeof gatewayAgentsSettings>;
export type AgentGatewaySettings = z.output<typeof agentGatewaySettings>;
