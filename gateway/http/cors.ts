// Cross-origin access to a front, as its module declares it: preflights (OPTIONS with
// Access-Control-Request-Method) are answered by the front itself, 204, without calling any
// service; other answers to an allowed origin say so and expose the headers a browser script
// needs (rate limit, Retry-After, X-Request-Id). An origin or method not allowed gets no
// Access-Control-Allow-* at all, so the browser refuses the call.
import type { IncomingHttpHeaders } from "node:http";

export interface CorsPolicy {
  /** Origins allowed (`https://app.example`); unset or empty: every origin. `*` in the list: every origin. */
  readonly allowedOrigins?: readonly string[];
  /** Methods a preflight may ask for; unset or empty: any. */
  readonly allowedMethods?: readonly string[];
  /** Access-Control-Allow-Credentials: true (the origin is then echoed, never `*`). */
  readonly allowCredentials?: boolean;
  /** Response headers a script may read. Default: the rate-limit headers, Retry-After, X-Request-Id. */
  readonly exposedHeaders?: readonly string[];
}

export const DEFAULT_EXPOSED_HEADERS = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-Id"];

export interface Cors {
  /** Whether the request is a preflight this front answers. */
  isPreflight(method: string | undefined, headers: IncomingHttpHeaders): boolean;
  /** The headers of a preflight's 204. */
  preflight(headers: IncomingHttpHeaders): Record<string, string>;
  /** The CORS headers of any other answer (empty when there is no Origin or it is not allowed). */
  answer(headers: IncomingHttpHeaders): Record<string, string>;
}

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

export function createCors(policy: CorsPolicy): Cors {
  const origins = (policy.allowedOrigins ?? []).map((o) => o.trim().replace(/\/+$/, "").toLowerCase()).filter(Boolean);
  const anyOrigin = origins.length === 0 || origins.includes("*");
  const methods = (policy.allowedMethods ?? []).map((m) => m.trim().toUpperCase()).filter(Boolean);
  const anyMethod = methods.length === 0 || methods.includes("*");
  const credentials = policy.allowCredentials === true;
  const expose = (policy.exposedHeaders ?? DEFAULT_EXPOSED_HEADERS).join(", ");

  /** The Access-Control-Allow-Origin value for `origin`, or undefined when it is not allowed. */
  function allowOrigin(origin: string | undefined): string | undefined {
    if (origin === undefined || origin === "") return undefined;
    const allowed = anyOrigin || origins.includes(origin.trim().toLowerCase());
    if (!allowed) return undefined;
    // `*` cannot carry credentials, and a restricted list names the one origin it allowed.
    return anyOrigin && !credentials ? "*" : origin;
  }

  function originHeaders(origin: string | undefined): Record<string, string> {
    const allow = allowOrigin(origin);
    // Vary: the answer depends on the Origin, so caches must not serve it to another one.
    if (allow === undefined) return { vary: "Origin" };
    const out: Record<string, string> = { vary: "Origin", "access-control-allow-origin": allow };
    if (credentials) out["access-control-allow-credentials"] = "true";
    return out;
  }

  return {
    isPreflight(method, headers) {
      return method === "OPTIONS" && headers.origin !== undefined && headers["access-control-request-method"] !== undefined;
    },
    preflight(headers) {
      const requested = (first(headers["access-control-request-method"]) ?? "").trim().toUpperCase();
      const base = originHeaders(first(headers.origin));
      if (base["access-control-allow-origin"] === undefined) return base;
      if (!anyMethod && !methods.includes(requested)) return { vary: "Origin" };
      base["access-control-allow-methods"] = anyMethod ? requested : methods.join(", ");
      const requestedHeaders = first(headers["access-control-request-headers"]);
      if (requestedHeaders) base["access-control-allow-headers"] = requestedHeaders;
      return base;
    },
    answer(headers) {
      if (headers.origin === undefined) return {};
      const out = originHeaders(first(headers.origin));
      if (out["access-control-allow-origin"] !== undefined) out["access-control-expose-headers"] = expose;
      return out;
    },
  };
}
