// The checks of enrollment requests, pure: tiers, the unenroll delay's bounds, and what counts as
// loosening a self-tier enrollment (a flag turned off, a shorter delay).
import type { EnrollmentRow, Tier } from "../store/devices.js";
import type { Checked } from "./device-rules.js";

export const tiers = ["self", "partner", "authority"] as const;

const policies: Record<Tier, string> = { self: "time_delay", partner: "partner_approval", authority: "authority_approval" };
export const policyOf = (tier: Tier) => policies[tier];

export function checkTier(value: string): Checked<Tier> {
  return (tiers as readonly string[]).includes(value)
    ? { ok: true, value: value as Tier }
    : { ok: false, field: "tier", message: `tier must be one of ${tiers.join(", ")}` };
}

export interface DelayBounds {
  min: number;
  max: number;
}

export function checkDelay(tier: Tier, hours: number | undefined, bounds: DelayBounds, fallback?: number): Checked<number | null> {
  if (tier !== "self") {
    if (hours === undefined) return { ok: true, value: null };
    return { ok: false, field: "unenroll_delay_hours", message: "unenroll_delay_hours applies to the self tier only" };
  }
  const value = hours ?? fallback;
  if (value === undefined) return { ok: true, value: null };
  if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    return { ok: false, field: "unenroll_delay_hours", message: `unenroll_delay_hours must be from ${bounds.min} to ${bounds.max}` };
  }
  return { ok: true, value };
}

export const flagNames = ["dnsBlocking", "appBlocking", "bypassDetection", "sendBlockEvents", "sendTamperEvents"] as const;
export type Flag = (typeof flagNames)[number];
export type FlagChanges = Partial<Record<Flag, boolean>>;

/** Whether applying `changes` to `row` would weaken it: a flag from on to off, or a shorter delay. */
export function loosens(row: EnrollmentRow, changes: FlagChanges, delayHours: number | null): boolean {
  if (flagNames.some((flag) => row[flag] && changes[flag] === false)) return true;
  return delayHours !== null && row.delayHours !== null && delayHours < row.delayHours;
}
