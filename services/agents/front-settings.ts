// The agent front's policy (interface: Gateway:Server, Gateway:Auth, Gateway:RateLimit,
// Gateway:Cors): the start-up checks of its settings (declared in front-settings-schema.ts), the API
// keys and role ladder the auth interceptor enforces, the CORS / forwarded-address / request-log
// policy the gateway applies, and the interceptor that keeps the shared rate-limit window and
// reports every refusal.
import type { DescMethod } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { createApiKeyStore, policyOf } from "../runtime/auth/index.js";
import { ConfigError } from "../runtime/config/index.js";
import type { Database } from "../runtime/database/index.js";
import type { FrontPolicy, ModuleAuth } from "../runtime/module/index.js";
import {
  createSlidingWindowLimiter,
  type RefusalReport,
  requestLimitInterceptor,
  slidingWindowTable,
} from "../runtime/rate-limit/index.js";
import type { AuditLog } from "./audit/types.js";
import { agentRoles, type FrontSettings, weakKeyProblem } from "./front-settings-schema.js";

export { type AgentRole, agentRoles, type FrontSettings, gatewayFrontSettings, weakKeyProblem } from "./front-settings-schema.js";

/**
 * The agent gateway's credentials, checked at start (a ConfigError stops it with exit code 2): with
 * Gateway:Auth:Enabled, at least one key and none weak. Off: an open API (loopback only, unless
 * Gateway:Auth:AllowAnonymousPublicBind).
 */
export function agentsAuth(settings: FrontSettings): ModuleAuth {
  const { auth } = settings.gateway;
  if (!auth.enabled) return {};
  if (auth.apiKeys.length === 0) {
    throw new ConfigError(
      "Invalid setting Gateway:Auth:ApiKeys: Gateway:Auth:Enabled is true but no key is configured. Add `{ Key, Name, Role }` items or set Gateway:Auth:Enabled=false.",
    );
  }
  for (const [index, { key }] of auth.apiKeys.entries()) {
    const problem = weakKeyProblem(key);
    if (problem) {
      throw new ConfigError(
        `Invalid setting Gateway:Auth:ApiKeys:${index}:Key: ${problem}. Use a random key of at least 16 characters (e.g. \`openssl rand -hex 32\`).`,
      );
    }
  }
  return { apiKeys: { store: createApiKeyStore(auth.apiKeys, "Gateway:Auth:ApiKeys"), roles: agentRoles } };
}

/** What the gateway does on the agent front for every request. */
export function agentsFrontPolicy(settings: FrontSettings): FrontPolicy {
  const { server, cors } = settings.gateway;
  return {
    cors: { allowedOrigins: cors.allowedOrigins, allowedMethods: cors.allowedMethods, allowCredentials: cors.allowCredentials },
    clientAddress: { forwardedHeaders: server.forwardedHeaders, trustedProxies: server.trustedProxies },
    verbose: server.verbose,
  };
}

/** The shared window: one row per key Name or client IP (as a digest) with its last minute of hits, counted per second. */
export const agentsRequestWindow = slidingWindowTable("agents_request_window");
export const agentsFrontMigrations = [
  { name: "agents-0004-request-window", class: agentsRequestWindow.migrations[0]! },
  { name: "agents-0004-request-window-seconds", class: agentsRequestWindow.migrations[1]! },
];

export interface FrontInterceptorDeps {
  settings: FrontSettings;
  db: Database;
  logger: Logger;
  /** Where auth.failed, auth.forbidden and ratelimit.exceeded are recorded; unset: logged only. */
  audit?: AuditLog;
  /** The limit in force, read on every request (hot reload); default: the settings at start. */
  rateLimit?: () => { enabled: boolean; maxRequestsPerMinute: number };
}

/** Health probes (auth NONE in the contract) are neither limited nor reported. */
const exempt = (method: DescMethod) => policyOf(method).kind === "none";

/** The interceptors the agents module runs around its services, outside auth. */
export function agentsFrontInterceptors(deps: FrontInterceptorDeps): Interceptor[] {
  const { db, logger, audit } = deps;
  const store = agentsAuth(deps.settings).apiKeys?.store;
  const current = deps.rateLimit ?? (() => deps.settings.gateway.rateLimit);
  const limiter = createSlidingWindowLimiter({ db, table: agentsRequestWindow });
  const onRefused = async (refusal: RefusalReport) => {
    // Never the key: its Name when it was a known one, the client address otherwise.
    logger.warn(
      { action: refusal.action, rpc: refusal.rpc, keyName: refusal.keyName, clientIp: refusal.clientAddress },
      refusal.action === "ratelimit.exceeded" ? "rate limit exceeded" : "API request refused",
    );
    if (!audit) return;
    await db
      .em()
      .fork()
      .transactional((em) =>
        audit.record(em, {
          action: refusal.action,
          severity: "warning",
          resource: refusal.rpc,
          userId: refusal.keyName,
          detail: { clientIp: refusal.clientAddress, reason: refusal.message },
        }),
      );
  };
  return [
    requestLimitInterceptor({
      limiter,
      settings: () => {
        const { enabled, maxRequestsPerMinute } = current();
        return { enabled, limit: maxRequestsPerMinute, windowSeconds: 60 };
      },
      exempt,
      identify(header) {
        const presented = header.get("x-api-key")?.trim();
        return presented && store ? store.lookup(presented)?.name : undefined;
      },
      onRefused,
      logger,
    }),
  ];
}
