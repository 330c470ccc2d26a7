// One observation as every history file format sees it: plain values from a SQL row, no ORM
// entity, so an export of tens of thousands of rows stays cheap.
export interface TrackPoint {
  readonly observationId: string;
  readonly deviceId: string;
  /** The device's identifier, when it has one; files name tracks by it. */
  readonly deviceIdentifier: string | null;
  readonly assetId: string | null;
  readonly observedAt: Date;
  readonly latitude: number;
  readonly longitude: number;
  readonly altitude: number | null;
  readonly accuracyMeters: number | null;
  readonly speedKmh: number | null;
  readonly headingDegrees: number | null;
}

/** Builds a file from points given in time order, in one pass; finish() answers the whole text. */
export interface TrackWriter {
  add(point: TrackPoint): void;
  finish(): string;
}
