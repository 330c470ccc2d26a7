// Shapes shared by the observation rules, the engine and the handlers. Pure types, no I/O.
import type { BreachRow, SpeedAlertRow } from "../store/alert-entities.js";

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

export interface AlertFindings {
  speedAlerts: SpeedAlertRow[];
  breaches: BreachRow[];
}
