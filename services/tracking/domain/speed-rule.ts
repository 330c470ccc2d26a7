// The speed-alert rule: a reading above the asset's threshold (or the configured default) raises
// an alert, unless the same device raised one less than the cooldown ago. Pure, no I/O. The two
// halves are separate so the ingest path judges each fix against its threshold once (it needs
// the answer before it reads the devices' last alerts) and applies the cooldown in input order.

export interface ThresholdVerdict {
  thresholdKmh: number;
  /** Strictly above the threshold. */
  over: boolean;
}

export function thresholdFor(assetThresholdKmh: number | null, defaultThresholdKmh: number): number {
  return assetThresholdKmh ?? defaultThresholdKmh;
}

/** The reading against its threshold: the asset's, or the default when the asset sets none. */
export function judgeThreshold(speedKmh: number | null, assetThresholdKmh: number | null, defaultThresholdKmh: number): ThresholdVerdict {
  const thresholdKmh = thresholdFor(assetThresholdKmh, defaultThresholdKmh);
  return { thresholdKmh, over: speedKmh !== null && speedKmh > thresholdKmh };
}

/**
 * Whether an over-threshold reading may raise an alert. One episode of speeding gives one alert:
 * the cooldown runs from the last alert's occurredAt (the observation time, not the wall clock, so
 * replayed or bulk-loaded tracks behave as live ones). An alert "in the future" of this reading
 * also suppresses it.
 */
export function cooledDown(observedAt: Date, lastAlertAt: Date | null, cooldownMs: number): boolean {
  return lastAlertAt === null || observedAt.getTime() - lastAlertAt.getTime() >= cooldownMs;
}
