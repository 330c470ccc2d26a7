// Redelivery backoff shared by both adapters so a failing handler behaves the same on either.
import type { RetryPolicy } from "./types.js";

export const DEFAULT_RETRY: Required<RetryPolicy> = { initialDelayMs: 500, maxDelayMs: 30_000 };

/** Delay before delivery number `deliveryCount + 1`, after `deliveryCount` failed attempts. */
export function retryDelay(deliveryCount: number, policy: RetryPolicy = {}): number {
  const initial = policy.initialDelayMs ?? DEFAULT_RETRY.initialDelayMs;
  const max = policy.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
  const exponent = Math.min(Math.max(deliveryCount - 1, 0), 30);
  return Math.min(initial * 2 ** exponent, max);
}
