// The UTC buckets of an analytics time series: hours, days, or weeks starting on Monday 00:00 UTC.

export type TimeseriesInterval = "1h" | "1d" | "1w";
export const timeseriesIntervals: readonly TimeseriesInterval[] = ["1h", "1d", "1w"];
/** The most buckets one series may hold. */
export const maxTimeseriesBuckets = 10_000;

const hour = 3_600_000;
const stepMs: Readonly<Record<TimeseriesInterval, number>> = { "1h": hour, "1d": 24 * hour, "1w": 7 * 24 * hour };
/** 1970-01-05T00:00:00Z, a Monday: weeks are counted from it. */
const firstMonday = 4 * 24 * hour;

/** A range the series cannot have: the service answers 400 VALIDATION_ERROR with this message. */
export class TimeseriesRangeError extends RangeError {
  override name = "TimeseriesRangeError";
}

export function isTimeseriesInterval(value: string): value is TimeseriesInterval {
  return (timeseriesIntervals as readonly string[]).includes(value);
}

/** The start of the bucket holding `at`. */
export function floorToBucket(at: Date, interval: TimeseriesInterval): Date {
  const step = stepMs[interval];
  const origin = interval === "1w" ? firstMonday : 0;
  return new Date(origin + Math.floor((at.getTime() - origin) / step) * step);
}

/**
 * Every bucket start of [floor(from), to), oldest first. Throws TimeseriesRangeError when from is
 * not before to, or when there would be more than 10,000 buckets (counted before any is made).
 */
export function timeseriesBuckets(from: Date, to: Date, interval: TimeseriesInterval): Date[] {
  if (!isTimeseriesInterval(interval)) throw new TimeseriesRangeError(`interval must be one of ${timeseriesIntervals.join(", ")}`);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw new TimeseriesRangeError("from and to must be valid times");
  if (from.getTime() >= to.getTime()) throw new TimeseriesRangeError("from must be before to");
  const step = stepMs[interval];
  const start = floorToBucket(from, interval).getTime();
  const count = Math.ceil((to.getTime() - start) / step);
  if (count > maxTimeseriesBuckets) {
    throw new TimeseriesRangeError(`the range holds ${count} buckets of ${interval}; at most ${maxTimeseriesBuckets} are allowed`);
  }
  return Array.from({ length: count }, (_, i) => new Date(start + i * step));
}

export interface TimeseriesPoint {
  timestamp: Date;
  block_count: number;
  tamper_alerts: number;
}

/** The series over `buckets` with zeros where `rows` (bucket start → counts, e.g. from SQL) have none. */
export function zeroFilledSeries(
  buckets: readonly Date[],
  rows: Iterable<{ bucket: Date; block_count: number; tamper_alerts: number }>,
): TimeseriesPoint[] {
  const byStart = new Map<number, { block_count: number; tamper_alerts: number }>();
  for (const row of rows) byStart.set(row.bucket.getTime(), row);
  return buckets.map((timestamp) => {
    const row = byStart.get(timestamp.getTime());
    return { timestamp, block_count: row?.block_count ?? 0, tamper_alerts: row?.tamper_alerts ?? 0 };
  });
}

/** RFC 3339 UTC without fractions when there are none: "2025-01-06T00:00:00Z", as proto3 JSON writes a Timestamp. */
export function utcText(at: Date): string {
  return at.toISOString().replace(".000Z", "Z");
}
