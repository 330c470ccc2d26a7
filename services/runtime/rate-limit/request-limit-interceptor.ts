// Server interceptor for a module that limits the requests of each caller (a front policy): a
// sliding window per credential name, else per client address, counted in the database so every
// instance shares it. It runs outside the auth interceptor, so a request auth refuses (401) is
// counted too, on the client address. Every answer it counts carries X-RateLimit-Limit,
// -Remaining and -Reset (response headers, or the error's metadata), which a REST front passes
// on; over the limit: ResourceExhausted with Retry-After, and the request is not counted. It also
// reports the caller's credential name to the front (x-meshwork-caller, for its request log) and
// every refusal (auth or limit) to the module, e.g. for an audit trail. Never a key.
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { clientAddressOf } from "../host/client-address.js";
import type { SlidingWindowDecision, SlidingWindowLimiter } from "./sliding-window.js";

export const RATE_LIMIT_HEADERS = {
  limit: "x-ratelimit-limit",
  remaining: "x-ratelimit-remaining",
  reset: "x-ratelimit-reset",
} as const;

const CALLER_HEADER = "x-meshwork-caller";

/** What is in force, read on every call (so a reloaded setting applies at once). */
export interface RequestLimitSettings {
  readonly enabled: boolean;
  /** Requests per window. */
  readonly limit: number;
  /** Default 60. */
  readonly windowSeconds?: number;
}

export interface RefusalReport {
  /** `auth.failed` (401), `auth.forbidden` (403) or `ratelimit.exceeded` (429). */
  readonly action: "auth.failed" | "auth.forbidden" | "ratelimit.exceeded";
  /** `package.Service/Method`. */
  readonly rpc: string;
  /** The credential's name when it was a known one (403, 429 of a key). */
  readonly keyName?: string;
  readonly clientAddress: string;
  /** The refusal as the caller saw it (never holds a key). */
  readonly message: string;
}

export interface RequestLimitOptions {
  readonly limiter: SlidingWindowLimiter;
  readonly settings: () => RequestLimitSettings;
  /** Methods neither limited nor reported (health probes). */
  readonly exempt: (method: DescMethod) => boolean;
  /** The name of the credential a call presents when it is a valid one; the window's key. */
  readonly identify: (header: Headers) => string | undefined;
  /** Each refused call, once; a failure here never changes the answer. */
  readonly onRefused?: (report: RefusalReport) => void | Promise<void>;
  readonly logger?: { warn(obj: object, msg?: string): void };
}

function rateHeaders(decision: SlidingWindowDecision): Record<string, string> {
  return {
    [RATE_LIMIT_HEADERS.limit]: String(decision.limit),
    [RATE_LIMIT_HEADERS.remaining]: String(decision.remaining),
    [RATE_LIMIT_HEADERS.reset]: String(decision.resetAt),
  };
}

export function requestLimitInterceptor(options: RequestLimitOptions): Interceptor {
  const { limiter, logger } = options;
  const report = (refusal: RefusalReport) => {
    try {
      void Promise.resolve(options.onRefused?.(refusal)).catch((err: unknown) =>
        logger?.warn({ err: err instanceof Error ? err.message : String(err), action: refusal.action }, "refusal not recorded"),
      );
    } catch (err) {
      logger?.warn({ err: err instanceof Error ? err.message : String(err), action: refusal.action }, "refusal not recorded");
    }
  };
  return (next) => async (req) => {
    if (options.exempt(req.method)) return await next(req);
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const keyName = options.identify(req.header);
    const clientAddress = clientAddressOf(req.header);
    const caller: Record<string, string> = keyName !== undefined ? { [CALLER_HEADER]: keyName } : {};
    const settings = options.settings();
    let headers = caller;
    if (settings.enabled) {
      const decision = await limiter.hit(keyName !== undefined ? `key:${keyName}` : `ip:${clientAddress}`, {
        limit: settings.limit,
        windowSeconds: settings.windowSeconds ?? 60,
      });
      headers = { ...caller, ...rateHeaders(decision) };
      if (!decision.allowed) {
        const message = `Rate limit of ${settings.limit} requests per ${settings.windowSeconds ?? 60} s exceeded; retry in ${decision.retryAfterSeconds} s.`;
        report({ action: "ratelimit.exceeded", rpc, keyName, clientAddress, message });
        throw new ConnectError(message, Code.ResourceExhausted, { ...headers, "retry-after": String(decision.retryAfterSeconds) });
      }
    }
    try {
      const res = await next(req);
      for (const [name, value] of Object.entries(headers)) res.header.set(name, value);
      return res;
    } catch (err) {
      // Anything else is a fault the error interceptor logs and hides; it is passed on untouched.
      if (!(err instanceof ConnectError)) throw err;
      const error = err;
      for (const [name, value] of Object.entries(headers)) error.metadata.set(name, value);
      if (error.code === Code.Unauthenticated) {
        report({ action: "auth.failed", rpc, clientAddress, message: error.rawMessage });
      } else if (error.code === Code.PermissionDenied && keyName !== undefined) {
        report({ action: "auth.forbidden", rpc, keyName, clientAddress, message: error.rawMessage });
      }
      throw error;
    }
  };
}
