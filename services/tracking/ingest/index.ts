// The observation engine: records observations with every rule (see recorder.ts) and keeps the
// geofence index current from local changes, other instances' geofence events on the bus, and a
// periodic reload from the database in case an event was missed.
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { GeofenceCreatedSchema, GeofenceDeletedSchema, GeofenceUpdatedSchema } from "../../../gen/tracking/v1/events_pb.js";
import type { Geofence } from "../../../gen/tracking/v1/geofence_pb.js";
import type { BusMessage } from "../../runtime/bus/index.js";
import type { TrackingDeps } from "../deps.js";
import { subjects, trackingStream } from "../events/subjects.js";
import { GeofenceEntity, type GeofenceRow } from "../store/geofence-entity.js";
import { FenceIndex, type FenceState } from "./fence-index.js";
import { createRecorder } from "./recorder.js";
import type { TrackingEngine } from "./types.js";

export type { BatchRecordOptions, BatchRecordResult, BatchRejection, RecordOptions, RecordResult, TrackingEngine } from "./types.js";

export interface EngineOptions {
  /** How often the index is checked against the database (default one minute; 0 turns it off). */
  reloadIntervalMs?: number;
}

export async function createTrackingEngine(deps: Omit<TrackingDeps, "engine">, options: EngineOptions = {}): Promise<TrackingEngine> {
  const log = deps.logger.child({ component: "tracking-engine" });
  const index = new FenceIndex();

  // Subscribe before the first load, so a fence changed in between is not missed; the index's
  // version check makes the order in which the two arrive irrelevant.
  const subscription = await deps.bus.subscribe(
    { stream: trackingStream.name, filterSubjects: [subjects.geofenceCreated, subjects.geofenceUpdated, subjects.geofenceDeleted] },
    (m) => onGeofenceEvent(index, m),
  );

  let reloading: Promise<void> | undefined;
  const reloadOnce = async (): Promise<void> => {
    const readAt = new Date();
    const active = await deps.db.em().find(GeofenceEntity, { isActive: true });
    index.reconcile(active.map(fenceStateOf), readAt);
  };
  const reload = (): Promise<void> => {
    reloading ??= reloadOnce().finally(() => {
      reloading = undefined;
    });
    return reloading;
  };

  try {
    await reload();
  } catch (err) {
    await subscription.stop();
    throw err;
  }
  log.debug({ fences: index.size }, "geofence index loaded");

  const interval = options.reloadIntervalMs ?? 60_000;
  const timer =
    interval > 0
      ? setInterval(() => reload().catch((err: unknown) => log.warn({ err }, "geofence index reload failed")), interval)
      : undefined;
  timer?.unref();

  const recorder = createRecorder(deps, index);
  return {
    record: recorder.record,
    recordBatch: recorder.recordBatch,
    applyGeofence: (row: GeofenceRow) => void index.apply(fenceStateOf(row)),
    removeGeofence: (id: string) => index.remove(id),
    async stop() {
      if (timer) clearInterval(timer);
      await subscription.stop();
      await reloading?.catch(() => {});
    },
  };
}

function fenceStateOf(
  row: Pick<GeofenceRow, "id" | "name" | "centerLatitude" | "centerLongitude" | "radiusMeters" | "isActive" | "updatedAt">,
): FenceState {
  return {
    id: row.id,
    name: row.name,
    centerLatitude: row.centerLatitude,
    centerLongitude: row.centerLongitude,
    radiusMeters: row.radiusMeters,
    isActive: row.isActive,
    updatedAt: row.updatedAt,
  };
}

function fenceStateOfMessage(g: Geofence): FenceState {
  return fenceStateOf({ ...g, name: g.name ?? null, updatedAt: g.updatedAt ? timestampDate(g.updatedAt) : new Date(0) });
}

/** Applies a geofence event, ours or another instance's (applying our own again changes nothing). */
function onGeofenceEvent(index: FenceIndex, m: BusMessage): void {
  switch (m.subject) {
    case subjects.geofenceCreated: {
      const g = fromBinary(GeofenceCreatedSchema, m.data).geofence;
      if (g) index.apply(fenceStateOfMessage(g));
      break;
    }
    case subjects.geofenceUpdated: {
      const g = fromBinary(GeofenceUpdatedSchema, m.data).geofence;
      if (g) index.apply(fenceStateOfMessage(g));
      break;
    }
    case subjects.geofenceDeleted: {
      const g = fromBinary(GeofenceDeletedSchema, m.data).geofence;
      if (g) index.remove(g.id);
      break;
    }
  }
}
