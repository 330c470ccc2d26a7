// Shapes shared by the observation rules, the ingest path and the handlers. Pure types, no I/O.

export type ObservationSource = "api" | "ingest" | "simulation" | "integration" | "bulk";

/** An ObservationInput as the handlers receive it (protobuf-es message fields). */
export interface ObservationInputLike {
  deviceId?: string;
  observedAt?: { seconds: bigint; nanos: number };
  latitude?: number;
  longitude?: number;
  altitude?: number;
  accuracyMeters?: number;
  speedKmh?: number;
  headingDegrees?: number;
  metadata?: string;
  deviceIdentifier?: string;
}

/** How an observation names its device: by id, or (ingest paths) by identifier. */
export type DeviceReference = { kind: "id"; id: string } | { kind: "identifier"; identifier: string };

/** An observation that passed every rule that needs no stored data. */
export interface CheckedObservation {
  device: DeviceReference;
  /** Millisecond precision: what a JS Date keeps, so dedupe and ordering agree everywhere. */
  observedAt: Date;
  latitude: number;
  longitude: number;
  altitude: number | null;
  accuracyMeters: number | null;
  speedKmh: number | null;
  headingDegrees: number | null;
  metadata: string | null;
}
