// Server interceptor: enforces each rpc's contract auth policy (see policy.ts) in one place, and
// runs the handler with the caller's identity in scope (currentIdentity(), ctx.values).
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { wrapStream } from "../host/interceptors/wrap-stream.js";
import type { ApiKeyStore } from "./api-key-store.js";
import { anonymous, callerKey, runAsCaller, type CallerContext, type Identity } from "./identity.js";
import { policyOf, type ResolvedPolicy } from "./policy.js";
import { type RoleRanking, roleSatisfies } from "./roles.js";

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
  /**
   * The codes a refusal names (a google.rpc.ErrorInfo reason, which error-message fronts write as
   * `error`): no token at all, and a token that does not verify. Unset: the status alone.
   */
  readonly reasons?: { readonly missing: string; readonly invalid: string };
  /** The identity the token stands for, or undefined when it is not valid (never throw for that). */
  verify(token: string, call: { method: DescMethod; header: Headers }): Promise<Identity | undefined> | Identity | undefined;
}

/** The credentials a service's callers may present, as its module declares them. */
export interface CredentialSchemes {
  /** API keys and the roles they carry, lowest first. */
  readonly apiKeys?: { readonly store: ApiKeyStore; readonly roles: RoleRanking };
  readonly bearer?: BearerVerifier;
}

export interface AuthInterceptorOptions {
  /**
   * Every service the interceptor guards, with its module's credentials. Checked when the
   * interceptor is built: a policy naming a role its scheme does not rank fails start-up. A call to
   * a service not listed here is refused.
   */
  readonly services: readonly { readonly service: DescService; readonly credentials: CredentialSchemes }[];
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

/**
 * A bearer 401: it says which credential to send (WWW-Authenticate, RFC 6750) and, when the
 * verifier names one, the code of the refusal.
 */
export function bearerRefusal(message: string, reason: string | undefined, invalid: boolean): ConnectError {
  const challenge = invalid ? 'Bearer error="invalid_token"' : "Bearer";
  const details = reason ? [{ desc: ErrorInfoSchema, value: { reason, domain: "meshwork" } }] : undefined;
  return new ConnectError(message, Code.Unauthenticated, { "www-authenticate": challenge }, details);
}

function presentedApiKey(header: Headers): string | undefined {
  const value = header.get(API_KEY_HEADER)?.trim();
  return value ? value : undefined;
}

function presentedBearer(header: Headers): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.get("authorization") ?? "");
  return match?.[1];
}

function checkPolicyRoles(service: DescService, credentials: CredentialSchemes): void {
  for (const method of service.methods) {
    const { kind, role } = policyOf(method);
    const ranking = kind === "api-key" ? credentials.apiKeys?.roles : kind === "bearer" ? credentials.bearer?.roles : undefined;
    if (ranking && role !== "" && !ranking.includes(role)) {
      throw new Error(`${service.typeName}/${method.name}: auth role "${role}" is not one of ${ranking.join(", ")}`);
    }
  }
}

/** One service's credentials, resolved once. */
interface Guard {
  readonly keys?: { readonly store: ApiKeyStore; readonly roles: RoleRanking };
  readonly bearer?: BearerVerifier;
  /** Nothing to check a credential against: every policy passes as anonymous. */
  readonly open: boolean;
}

export function authInterceptor(options: AuthInterceptorOptions): Interceptor {
  const { logger } = options;
  const guards = new Map<string, Guard>();
  for (const { service, credentials } of options.services) {
    checkPolicyRoles(service, credentials);
    const keys = credentials.apiKeys && credentials.apiKeys.store.size > 0 ? credentials.apiKeys : undefined;
    guards.set(service.typeName, { keys, bearer: credentials.bearer, open: keys === undefined && credentials.bearer === undefined });
  }

  const refuse = (method: DescMethod, error: ConnectError, keyName?: string): never => {
    logger?.debug({ rpc: `${method.parent.typeName}/${method.name}`, code: Code[error.code], keyName }, "call refused by auth policy");
    throw error;
  };

  /** Whoever the credentials say, without requiring any (operations open to anyone). */
  async function identify(guard: Guard, method: DescMethod, header: Headers): Promise<CallerContext> {
    const { keys: apiKeys, bearer } = guard;
    const key = apiKeys ? presentedApiKey(header) : undefined;
    if (key !== undefined) {
      const found = apiKeys!.store.lookup(key);
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

  async function authenticate(guard: Guard, method: DescMethod, header: Headers, policy: ResolvedPolicy): Promise<CallerContext> {
    const { keys: apiKeys, bearer, open } = guard;
    switch (policy.kind) {
      case "none":
        return identify(guard, method, header);
      case "api-key": {
        if (!apiKeys) {
          if (open) return openCaller;
          return refuse(method, new ConnectError("this service does not accept API keys", Code.Unauthenticated));
        }
        const key = presentedApiKey(header);
        if (key === undefined) {
          return refuse(method, new ConnectError("missing API key: send it in the X-Api-Key header", Code.Unauthenticated));
        }
        const found = apiKeys.store.lookup(key);
        if (!found) return refuse(method, rejectedCredentialError("api-key"));
        if (!roleSatisfies(apiKeys.roles, found.role, policy.role)) {
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
          const message = "missing bearer token: send it as Authorization: Bearer <token>";
          return refuse(method, bearerRefusal(message, bearer.reasons?.missing, false));
        }
        const found = await bearer.verify(token, { method, header });
        if (!found?.authenticated) return refuse(method, bearerRefusal("invalid bearer token", bearer.reasons?.invalid, true));
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
    const guard = guards.get(req.service.typeName);
    if (guard === undefined) {
      throw new ConnectError(`no credentials are declared for ${req.service.typeName}`, Code.Unimplemented);
    }
    // Open, nothing to check: no promise of its own for the call.
    if (guard.open) return enter(next, req, openCaller);
    return authenticate(guard, req.method, req.header, policyOf(req.method)).then((caller) => enter(next, req, caller));
  };
}
