// A history file in the format asked for: its writer, media type and download name.
import { createGeoJsonWriter } from "./geojson.js";
import { createGpxWriter } from "./gpx.js";
import { exportFileName, fileTypes, type FileFormat, type FileType } from "./export-format.js";
import { createObservationCsvWriter } from "./observation-csv.js";
import type { TrackPoint, TrackWriter } from "../domain/track-point.js";

const writers: Readonly<Record<FileFormat, () => TrackWriter>> = {
  csv: createObservationCsvWriter,
  geojson: createGeoJsonWriter,
  gpx: () => createGpxWriter(),
};

export interface ObservationFile extends FileType {
  readonly fileName: string;
  readonly data: Uint8Array;
  /** Points written. */
  readonly count: number;
}

/** Writes points (already in time order) as one file, in one pass. */
export async function writeObservationFile(
  format: FileFormat,
  points: AsyncIterable<TrackPoint> | Iterable<TrackPoint>,
  at: Date,
): Promise<ObservationFile> {
  const writer = writers[format]();
  let count = 0;
  for await (const point of points) {
    writer.add(point);
    count++;
  }
  const type = fileTypes[format];
  return {
    ...type,
    fileName: exportFileName("observations", type.extension, at),
    data: new TextEncoder().encode(writer.finish()),
    count,
  };
}
