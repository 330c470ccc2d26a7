// The start-up rule for an open API: a service with no credential configured lets anyone who
// reaches a listener call everything, so its listeners stay on loopback unless the operator
// accepts that in writing. Each module says whether its service is protected.
import { ConfigError } from "../config/index.js";
import { isLoopbackHost } from "./loopback.js";

export interface Listener {
  /** The setting that chose the address, named in the refusal (e.g. `Fronts:Host`). */
  readonly setting: string;
  readonly host: string;
}

export interface GuardedApi {
  /** For people: the module's title, as its warnings and errors name it. */
  readonly title: string;
  /** A credential is configured (an API key, or a bearer verifier). */
  readonly protected: boolean;
  /** Where its operations can be reached from. */
  readonly listeners: readonly Listener[];
  /** The setting that configures its credentials, named in the refusal. */
  readonly credentialSetting: string;
  /** The API's own permission to bind publicly without credentials (a setting of its module). */
  readonly allowAnonymousPublicBind?: boolean;
  /** The setting that gives that permission, named in the refusal; default Auth:AllowAnonymousPublicBind. */
  readonly allowSetting?: string;
}

export interface OpenApiGuardOptions {
  readonly allowAnonymousPublicBind: boolean;
  readonly apis: readonly GuardedApi[];
}

/** Throws a ConfigError naming the settings when an open API would listen on a public address. */
export function assertOpenApiBindAllowed(options: OpenApiGuardOptions): void {
  if (options.allowAnonymousPublicBind) return;
  for (const api of options.apis) {
    if (api.protected || api.allowAnonymousPublicBind) continue;
    const exposed = api.listeners.filter((l) => !isLoopbackHost(l.host));
    if (exposed.length === 0) continue;
    const where = exposed.map((l) => `${l.setting}=${l.host}`).join(" and ");
    throw new ConfigError(
      `${where} is not a loopback address, but no credential is configured for the ${api.title} API (${api.credentialSetting}), ` +
        `so anyone who can reach it could call every operation. Configure ${api.credentialSetting}, bind to 127.0.0.1, or set ` +
        `${api.allowSetting ?? "Auth:AllowAnonymousPublicBind"}=true to serve an open API on a public address.`,
    );
  }
}

/** The start-up warning for an open API; undefined when a credential is configured. */
export function openApiWarning(api: Pick<GuardedApi, "title" | "protected">): string | undefined {
  if (api.protected) return undefined;
  return `no API keys configured: the ${api.title} API is open to anyone who can reach it`;
}
