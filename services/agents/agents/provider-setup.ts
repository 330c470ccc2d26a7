// The provider pool from Providers:<name>:* settings. A provider's key, first match wins: the
// `--api-key` flag (AgentGateway:ApiKey, default provider only), `ApiKey` or `<NAME>_API_KEY` (the
// loader fills the field from the variable), the credential `provider.<name>` in the credential
// store; an assistant provider exchanges its OAuth token instead. Keys are read per attempt and
// never logged.
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { CredentialStore } from "../credentials/index.js";
import { createAssistantProvider, createOpenAiProvider, type PooledProvider, ProviderPool } from "../providers/index.js";
import type { AgentGatewaySettings, GatewayAgentsSettings, ProviderSettings } from "../settings.js";

export interface ProviderSetupOptions {
  providers: Readonly<Record<string, ProviderSettings>>;
  agents: GatewayAgentsSettings;
  gateway: AgentGatewaySettings;
  credentials?: Pick<CredentialStore, "get">;
  logger?: Pick<LoggerLike, "info" | "warn">;
}

/** How long a credential store miss is remembered before the store is asked again. */
const MISS_TTL_MS = 30_000;

function storedKey(name: string, credentials: ProviderSetupOptions["credentials"], logger: ProviderSetupOptions["logger"]) {
  let found: string | undefined;
  let missedAt = Number.NEGATIVE_INFINITY;
  return async (): Promise<string | undefined> => {
    if (found !== undefined || !credentials) return found;
    if (Date.now() - missedAt < MISS_TTL_MS) return undefined;
    try {
      found = await credentials.get(`provider.${name}`);
    } catch (error) {
      logger?.warn({ provider: name, error: error instanceof Error ? error.name : "unknown" }, "credential store unreadable");
    }
    if (found === undefined) missedAt = Date.now();
    return found;
  };
}

/** The provider `--api-key` belongs to: DefaultProvider when it names one, else the first by Priority. */
function defaultProviderName(options: ProviderSetupOptions): string | undefined {
  const names = Object.entries(options.providers)
    .sort(([, a], [, b]) => a.priority - b.priority)
    .map(([name]) => name);
  const configured = options.agents.defaultProvider;
  return configured && names.includes(configured) ? configured : names[0];
}

export function pooledProviders(options: ProviderSetupOptions): PooledProvider[] {
  const flagOwner = options.gateway.apiKey ? defaultProviderName(options) : undefined;
  return Object.entries(options.providers).map(([name, p]) => {
    const fromStore = storedKey(name, options.credentials, options.logger);
    const common = { name, retryBaseMs: options.gateway.providerRetryBaseMs, disableTlsValidation: p.dangerouslyDisableSslValidation };
    const client =
      p.kind === "assistant"
        ? createAssistantProvider({
            ...common,
            tokenExchangeUrl: p.tokenExchangeUrl!,
            editorVersion: p.editorVersion,
            oauthToken: p.oauthToken,
            tokenFilePath: p.tokenFilePath,
            prefix: p.oauthTokenPrefix,
          })
        : createOpenAiProvider({
            ...common,
            baseUrl: p.baseUrl!,
            apiKey: async () => (name === flagOwner ? options.gateway.apiKey : undefined) ?? p.apiKey ?? (await fromStore()),
          });
    return { client, models: p.models, priority: p.priority };
  });
}

export function createProviderPool(options: ProviderSetupOptions): ProviderPool {
  return new ProviderPool({
    providers: pooledProviders(options),
    defaultProvider: options.agents.defaultProvider,
    probeIntervalMs: options.gateway.providerProbeSeconds * 1000,
    logger: options.logger,
  });
}
