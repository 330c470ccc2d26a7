// The time series as RFC 4180 CSV (CRLF line ends, quoted where needed), written by csv-stringify.
import { stringify } from "csv-stringify/sync";
import { type TimeseriesPoint, utcText } from "./buckets.js";

export const timeseriesCsvHeader = ["timestamp", "block_count", "tamper_alerts"] as const;

/** `timestamp,block_count,tamper_alerts` and a row per point, timestamps in RFC 3339 UTC. */
export function timeseriesCsv(points: readonly TimeseriesPoint[]): string {
  return stringify(
    points.map((p) => [utcText(p.timestamp), p.block_count, p.tamper_alerts]),
    { header: true, columns: [...timeseriesCsvHeader], record_delimiter: "windows" },
  );
}
