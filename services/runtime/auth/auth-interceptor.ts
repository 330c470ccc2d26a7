// Server interceptor: enforces each rpc's contract auth policy (see policy.ts) in one place, and
// runs the handler with the caller's identity in scope (currentIdentity(), ctx.values).
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { wrapStream } from "../host/interceptors/wrap-stream.js";
import type { ApiKeyStore } from "./api-key-store.js";
import { anonymous, callerKey, runAsCaller, type CallerContext, type Identity } from "./identity.js";
import { policyOf, type ResolvedPolicy } from "./policy.js";
import { apiKeyRoles, roleSatisfies, type RoleRanking } from "./roles.js";

export const API_KEY_HEADER = "x-api-key";

type Next = Parameters<Interceptor>[0];
type AnyRequest = Parameters<Next>[0];

/**
 * Checks bearer tokens (Authorization: Bearer ...) for AUTH_KIND_BEARER rpcs. A module that
 * issues tokens plugs one in; without one, bearer rpcs answer Unimplemented (or are open when no
 * credential of any kind is configured).
 */
export interface BearerVerifier {
  /** The roles tokens carry, lowest first. */
  readonly roles: RoleRanking;
  /** The identity the token stands for, or undefined when it is not valid (never throw for that). */
  verify(token: string, call: { method: DescMethod; header: Headers }): Promise<Identity | undefined> | Identity | undefined;
}

export interface AuthInterceptorOptions {
  readonly apiKeys: ApiKeyStore;
  readonly bearer?: BearerVerifier;
  /** Services checked when the interceptor is built: a policy naming an unknown role fails start-up. */
  readonly services?: readonly DescService[];
  /** Refusals are logged at debug level, with the key's name, never the key. */
  readonly logger?: { debug(obj: object, msg?: string): void };
}

const openCaller: CallerContext = Object.freeze({ identity: anonymous });

/** The Unauthenticated answer for a credential that was sent but is not known. */
export function rejectedCredentialError(scheme: "api-key" | "bearer"): ConnectError {
  return scheme === "api-key"
    ? new ConnectError("unknown API key", Code.Unauthenticated)
    : new ConnectError("invalid bearer token", Code.Unauthenticated);
}

function presentedApiKey(header: Headers): string | undefined {
  const value = header.get(API_KEY_HEADER)?.trim();
  return value ? value : undefined;
}

function presentedBearer(header: Headers): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.get("authorization") ?? "");
  return match?.[1];
}

function checkPolicyRoles(services: readonly DescService[], bearer: BearerVerifier | undefined): void {
  for (const service of services) {
    for (const method of service.methods) {
      const { kind, role } = policyOf(method);
      const ranking = kind === "api-key" ? apiKeyRoles : kind === "bearer" ? bearer?.roles : undefined;
      if (ranking && role !== "" && !ranking.includes(role)) {
        throw new Error(`${service.typeName}/${method.name}: auth role "${role}" is not one of ${ranking.join(", ")}`);
      }
    }
  }
}

export function authInterceptor(options: AuthInterceptorOptions): Interceptor {
  const { apiKeys, bearer, logger } = options;
  checkPolicyRoles(options.services ?? [], bearer);
  const keysConfigured = apiKeys.size > 0;
  // Open mode: nothing to check a credential against, so every policy passes as anonymous.
  const open = !keysConfigured && bearer === undefined;

  const refuse = (method: DescMethod, error: ConnectError, keyName?: string): never => {
    logger?.debug({ rpc: `${method.parent.typeName}/${method.name}`, code: Code[error.code], keyName }, "call refused by auth policy");
    throw error;
  };

  /** Whoever the credentials say, without requiring any (operations open to anyone). */
  async function identify(method: DescMethod, header: Headers): Promise<CallerContext> {
    const key = keysConfigured ? presentedApiKey(header) : undefined;
    if (key !== undefined) {
      const found = apiKeys.lookup(key);
      return found
        ? { identity: { authenticated: true, name: found.name, role: found.role, scheme: "api-key" } }
        : { identity: anonymous, rejectedCredential: "api-key" };
    }
    const token = bearer ? presentedBearer(header) : undefined;
    if (token !== undefined) {
      const found = await bearer!.verify(token, { method, header });
      return found ? { identity: found } : { identity: anonymous, rejectedCredential: "bearer" };
    }
    return openCaller;
  }

  async function authenticate(method: DescMethod, header: Headers, policy: ResolvedPolicy): Promise<CallerContext> {
    switch (policy.kind) {
      case "none":
        return identify(method, header);
      case "api-key": {
        if (!keysConfigured) return openCaller;
        const key = presentedApiKey(header);
        if (key === undefined) {
          return refuse(method, new ConnectError("missing API key: send it in the X-Api-Key header", Code.Unauthenticated));
        }
        const found = apiKeys.lookup(key);
        if (!found) return refuse(method, rejectedCredentialError("api-key"));
        if (!roleSatisfies(apiKeyRoles, found.role, policy.role)) {
          const error = new ConnectError(
            `the API key "${found.name}" has the role ${found.role}; this operation needs ${policy.role}`,
            Code.PermissionDenied,
          );
          return refuse(method, error, found.name);
        }
        return { identity: { authenticated: true, name: found.name, role: found.role, scheme: "api-key" } };
      }
      case "bearer": {
        if (bearer === undefined) {
          if (open) return openCaller;
          return refuse(method, new ConnectError("bearer tokens are not accepted by this service yet", Code.Unimplemented));
        }
        const token = presentedBearer(header);
        if (token === undefined) {
          return refuse(method, new ConnectError("missing bearer token: send it as Authorization: Bearer <token>", Code.Unauthenticated));
        }
        const found = await bearer.verify(token, { method, header });
        if (!found?.authenticated) return refuse(method, rejectedCredentialError("bearer"));
        if (!roleSatisfies(bearer.roles, found.role ?? "", policy.role)) {
          return refuse(method, new ConnectError(`this operation needs the role ${policy.role}`, Code.PermissionDenied), found.name);
        }
        return { identity: found };
      }
    }
  }

  const enter = (next: Next, req: AnyRequest, caller: CallerContext) => {
    req.contextValues.set(callerKey, caller);
    // Always a fresh scope: in-process calls would otherwise inherit their caller's identity.
    const res = runAsCaller(caller, () => next(req));
    if (!req.stream) return res;
    // A streaming handler runs while its messages are pulled, after this function returned.
    const run = <R>(fn: () => R): R => runAsCaller(caller, fn);
    return res.then((streamed) => (streamed.stream ? { ...streamed, message: wrapStream(streamed.message, { run }) } : streamed));
  };

  return (next) => (req) => {
    // Open, nothing to check: no promise of its own for the call.
    if (open) return enter(next, req, openCaller);
    return authenticate(req.method, req.header, policyOf(req.method)).then((caller) => enter(next, req, caller));
  };
}
