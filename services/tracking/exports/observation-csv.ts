// History as CSV: the reference's columns, then AccuracyMeters (added at the end so readers that
// go by position keep working). Rows are written in batches through the shared RFC 4180 writer.
import { toCsv, type CsvValue } from "./csv.js";
import type { TrackPoint, TrackWriter } from "../domain/track-point.js";

export const observationCsvHeader = [
  "ObservationId",
  "DeviceId",
  "AssetId",
  "ObservedAt",
  "Latitude",
  "Longitude",
  "Altitude",
  "SpeedKmh",
  "Heading",
  "AccuracyMeters",
] as const;

const BATCH = 1000;

function csvRow(p: TrackPoint): CsvValue[] {
  return [
    p.observationId,
    p.deviceId,
    p.assetId,
    p.observedAt,
    p.latitude,
    p.longitude,
    p.altitude,
    p.speedKmh,
    p.headingDegrees,
    p.accuracyMeters,
  ];
}

export function createObservationCsvWriter(): TrackWriter {
  // toCsv always starts with the header line; later batches drop that known prefix.
  const headerText = toCsv(observationCsvHeader, []);
  const parts = [headerText];
  let pending: CsvValue[][] = [];
  const flush = () => {
    if (pending.length === 0) return;
    parts.push(toCsv(observationCsvHeader, pending).slice(headerText.length));
    pending = [];
  };
  return {
    add(point) {
      pending.push(csvRow(point));
      if (pending.length >= BATCH) flush();
    },
    finish() {
      flush();
      return parts.join("");
    },
  };
}
