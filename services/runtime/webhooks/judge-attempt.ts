// What an attempt's answer (or failure) means for the delivery: done, try again, or give up.
// Pure, so the whole table is tested without a network.
import { parseRetryAfter } from "./backoff.js";
import { RefusedDestination } from "./ssrf-guard.js";

export type Verdict =
  | { kind: "delivered" }
  | { kind: "retry"; error: string; retryAfterMs?: number }
  | { kind: "failed"; error: string; disableEndpoint?: boolean };

/** 2xx delivers; 429 and 5xx are worth another try (Retry-After honoured); 410 disables; the rest is final. */
export function judgeAnswer(status: number, retryAfter: string | undefined, nowMs: number): Verdict {
  if (status >= 200 && status < 300) return { kind: "delivered" };
  if (status === 429 || (status >= 500 && status < 600)) {
    const retryAfterMs = parseRetryAfter(retryAfter, nowMs);
    return { kind: "retry", error: `HTTP ${status}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  if (status === 410) return { kind: "failed", error: "HTTP 410 Gone: endpoint disabled", disableEndpoint: true };
  // Redirects are not followed: the new location has not been through the SSRF guard.
  if (status >= 300 && status < 400) return { kind: "failed", error: `HTTP ${status}: redirects are not followed` };
  return { kind: "failed", error: `HTTP ${status}` };
}

/** A failure before any answer: refused destinations are final, timeouts and network errors are retried. */
export function judgeError(err: unknown, timeoutSeconds: number): Verdict {
  if (err instanceof RefusedDestination) return { kind: "failed", error: err.message };
  if (isTimeout(err)) return { kind: "retry", error: `timed out after ${timeoutSeconds} s` };
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return { kind: "retry", error: `could not resolve the host (${code})` };
  // Only the code: a message could quote a header or a URL with a credential in it.
  return { kind: "retry", error: `network error (${code ?? (err instanceof Error ? err.name : "unknown")})` };
}

export function isTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === "TimeoutError";
}
