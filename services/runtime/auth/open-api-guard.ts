// The start-up rule for an open API: with no API key configured anyone who reaches a listener
// may call everything, so listeners stay on loopback unless the operator accepts that in writing.
import { ConfigError } from "../config/index.js";
import { isLoopbackHost } from "./loopback.js";

export interface Listener {
  /** The setting that chose the address, named in the refusal (e.g. `Gateway:Host`). */
  readonly setting: string;
  readonly host: string;
}

export interface OpenApiGuardOptions {
  readonly apiKeyCount: number;
  readonly allowAnonymousPublicBind: boolean;
  readonly listeners: readonly Listener[];
}

/** Throws a ConfigError naming the settings when an open API would listen on a public address. */
export function assertOpenApiBindAllowed(options: OpenApiGuardOptions): void {
  if (options.apiKeyCount > 0 || options.allowAnonymousPublicBind) return;
  const exposed = options.listeners.filter((l) => !isLoopbackHost(l.host));
  if (exposed.length === 0) return;
  const where = exposed.map((l) => `${l.setting}=${l.host}`).join(" and ");
  throw new ConfigError(
    `${where} is not a loopback address, but no API key is configured (Auth:ApiKeys), so anyone who can reach it ` +
      `could call every operation. Configure Auth:ApiKeys, bind to 127.0.0.1, or set ` +
      `Auth:AllowAnonymousPublicBind=true to serve an open API on a public address.`,
  );
}

/** The start-up warning for an open API; undefined when keys are configured. */
export function openApiWarning(apiKeyCount: number, apiNames: readonly string[]): string | undefined {
  if (apiKeyCount > 0) return undefined;
  const names = apiNames.length > 0 ? apiNames.join(", ") : "service";
  return `no API keys configured: the ${names} API is open to anyone who can reach it`;
}
