// The service's refusals: a Connect code for gRPC callers and, as a google.rpc.ErrorInfo reason,
// the code the REST front writes as `error` (INVALID_CREDENTIALS, EMAIL_ALREADY_EXISTS, ...).
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { RateLimiter, RateLimitRule } from "../runtime/rate-limit/index.js";

const DOMAIN = "protection.meshwork";

export function refusal(code: Code, reason: string, message: string, headers?: Record<string, string>): ConnectError {
  return new ConnectError(message, code, headers, [{ desc: ErrorInfoSchema, value: { reason, domain: DOMAIN } }]);
}

/** 400 VALIDATION_ERROR naming the field. */
export function validationError(field: string, message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: ErrorInfoSchema, value: { reason: "VALIDATION_ERROR", domain: DOMAIN } },
    { desc: BadRequestSchema, value: { fieldViolations: [{ field, description: message }] } },
  ]);
}

/** The value of a passed check; a failed one is a 400 naming its field. */
export function accepted<T>(checked: { ok: true; value: T } | { ok: false; field: string; message: string }): T {
  if (!checked.ok) throw validationError(checked.field, checked.message);
  return checked.value;
}

/** A 401 of the token endpoints: it says which credential to send, as every 401 here does. */
export function unauthenticated(reason: string, message: string): ConnectError {
  return refusal(Code.Unauthenticated, reason, message, { "www-authenticate": "Bearer" });
}

/** 429 RATE_LIMIT_EXCEEDED with Retry-After in seconds. */
export function rateLimited(retryAfterSeconds: number, message = "Too many requests; try again later."): ConnectError {
  return refusal(Code.ResourceExhausted, "RATE_LIMIT_EXCEEDED", message, { "retry-after": String(retryAfterSeconds) });
}

/** Counts one request against `rule` under `key`; over the limit, 429 RATE_LIMIT_EXCEEDED. */
export async function withinLimit(limits: RateLimiter, key: string, rule: RateLimitRule): Promise<void> {
  const decision = await limits.hit(key, rule);
  if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
}
