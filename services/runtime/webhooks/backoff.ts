// When a failed delivery is tried again: exponential backoff with full jitter, unless the
// receiver said when with Retry-After.

/** A receiver asking for more than a day is not waited for longer than that. */
export const maxRetryAfterMs = 24 * 60 * 60 * 1000;

export interface BackoffPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
}

/**
 * Delay after the `failedAttempts`-th failure: uniformly random in [0, min(max, initial * 2^(n-1))].
 * Full jitter spreads the retries of many deliveries that failed together (a receiver outage).
 */
export function backoffDelayMs(failedAttempts: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(failedAttempts - 1, 0), 40);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** exponent);
  return Math.floor(random() * (ceiling + 1));
}

/**
 * Retry-After (RFC 9110): delay-seconds or an HTTP date. Milliseconds from `nowMs`, at least 0 and
 * at most a day; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === "") return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, maxRetryAfterMs);
  // Only the date forms HTTP allows; Date.parse alone would take "1.5" or "tomorrow"-like text too.
  if (!/^[A-Za-z]{3,9},? .*\d{2}:\d{2}:\d{2}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(at - nowMs, 0), maxRetryAfterMs);
}

/** The delay before the next attempt: the receiver's Retry-After when it gave one, else backoff. */
export function retryDelayMs(
  failedAttempts: number,
  policy: BackoffPolicy,
  retryAfterMs: number | undefined,
  random?: () => number,
): number {
  return retryAfterMs ?? backoffDelayMs(failedAttempts, policy, random);
}
