// The observation engine's contract: recording one observation with every rule (validation,
// dedupe, speed alerts, geofence enter/exit) in one transaction, and the live geofence index.
import type { ObservationInputLike, ObservationSource } from "../domain/observation-types.js";
import type { BreachRow, SpeedAlertRow } from "../store/alert-entities.js";
import type { GeofenceRow } from "../store/geofence-entity.js";
import type { ObservationRow } from "../store/observation-entity.js";

export interface RecordOptions {
  source: ObservationSource;
  /** Ingest, integration and bulk paths may name the device by identifier instead of id. */
  resolveIdentifier: boolean;
}

/** What one observation raised. */
export interface AlertFindings {
  speedAlerts: SpeedAlertRow[];
  breaches: BreachRow[];
}

export interface RecordResult extends AlertFindings {
  observation: ObservationRow;
  /** The same device already had an observation at this observedAt: it is answered, nothing else happens. */
  duplicate: boolean;
}

export interface BatchRecordOptions extends RecordOptions {
  /** Added to every reported index, for a stream recorded in several batches. Default 0. */
  indexOffset?: number;
}

/** One refused item of a batch; an item with several problems appears once per problem. */
export interface BatchRejection {
  index: number;
  /** Proto path within the item, e.g. `latitude` or `device_id`. */
  field: string;
  description: string;
}

export interface BatchRecordResult {
  accepted: number;
  duplicates: number;
  rejected: BatchRejection[];
  speedAlertsRaised: number;
  breachesDetected: number;
}

export interface TrackingEngine {
  /**
   * Records one observation: checks it (InvalidArgument / FailedPrecondition / NotFound naming
   * the field), dedupes, raises speed alerts and breaches, writes events through the outbox.
   */
  record(input: ObservationInputLike, options: RecordOptions): Promise<RecordResult>;
  /**
   * Records many observations with the same rules, as if ingested one by one in order, but in
   * chunked transactions with multi-row writes. Refusals are reported by index, never thrown.
   */
  recordBatch(inputs: readonly ObservationInputLike[], options: BatchRecordOptions): Promise<BatchRecordResult>;
  /** Call after committing a created or changed geofence, so this instance sees it at once. */
  applyGeofence(row: GeofenceRow): void;
  /** Call after committing a geofence deletion. */
  removeGeofence(id: string): void;
  /** Stops the bus subscription that keeps the index current across instances. */
  stop(): Promise<void>;
}
