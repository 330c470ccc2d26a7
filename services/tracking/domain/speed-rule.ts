// The speed-alert rule: a reading above the asset's threshold (or the configured default) raises
// an alert, unless the same device raised one less than the cooldown ago. Pure, no I/O.

export interface SpeedRuleInput {
  speedKmh: number | null;
  /** The device's asset's threshold; null when there is no asset or it sets none. */
  assetThresholdKmh: number | null;
  defaultThresholdKmh: number;
  observedAt: Date;
  /** occurredAt of the device's newest speed alert, if any. */
  lastAlertAt: Date | null;
  cooldownMs: number;
}

export interface SpeedVerdict {
  thresholdKmh: number;
  /** Above the threshold. */
  over: boolean;
  /** Above the threshold and outside the cooldown: record an alert. */
  raise: boolean;
}

export function thresholdFor(assetThresholdKmh: number | null, defaultThresholdKmh: number): number {
  return assetThresholdKmh ?? defaultThresholdKmh;
}

/**
 * One episode of speeding gives one alert: the cooldown runs from the last alert's occurredAt
 * (the observation time, not the wall clock, so replayed or bulk-loaded tracks behave as live
 * ones). An alert "in the future" of this reading also suppresses it.
 */
export function judgeSpeed(input: SpeedRuleInput): SpeedVerdict {
  const thresholdKmh = thresholdFor(input.assetThresholdKmh, input.defaultThresholdKmh);
  const over = input.speedKmh !== null && input.speedKmh > thresholdKmh;
  const cooled = input.lastAlertAt === null || input.observedAt.getTime() - input.lastAlertAt.getTime() >= input.cooldownMs;
  return { thresholdKmh, over, raise: over && cooled };
}
