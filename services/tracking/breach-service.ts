// tracking.v1.GeofenceBreachService handlers: the filtered list (JSON page or CSV file) and
// acknowledgement, one or in bulk. Breaches themselves are written by the observation engine.
import type { ServiceImpl } from "@connectrpc/connect";
import type { GeofenceBreachService } from "../../gen/tracking/v1/breach_pb.js";
import { GeofenceBreachAcknowledgedSchema } from "../../gen/tracking/v1/events_pb.js";
import { alertHandlers } from "./alert-handlers.js";
import { toBreach } from "./mappers/to-message.js";
import { BreachEntity } from "./store/alert-entities.js";
import type { TrackingDeps } from "./deps.js";

export function breachService(deps: TrackingDeps): ServiceImpl<typeof GeofenceBreachService> {
  const handlers = alertHandlers(deps, {
    entity: BreachEntity,
    noun: "geofence breach",
    filename: "geofence-breaches.csv",
    // The columns ListGeofenceBreaches documents for format=csv.
    csvHeader: [
      "Id",
      "DeviceId",
      "DeviceIdentifier",
      "AssetId",
      "GeofenceId",
      "GeofenceName",
      "BreachEventType",
      "Latitude",
      "Longitude",
      "OccurredAt",
      "Acknowledged",
      "AcknowledgedBy",
      "AcknowledgedAt",
    ],
    csvRow: (row, names) => [
      row.id,
      row.deviceId,
      names.deviceIdentifier,
      row.assetId,
      row.geofenceId,
      names.geofenceName,
      row.breachEventType,
      row.latitude,
      row.longitude,
      row.occurredAt,
      row.acknowledged,
      row.acknowledgedBy,
      row.acknowledgedAt,
    ],
    toMessage: toBreach,
    recordAcknowledged: (tx, breach) => {
      tx.record(GeofenceBreachAcknowledgedSchema, { breach });
    },
  });
  return {
    listGeofenceBreaches: handlers.list,
    acknowledgeGeofenceBreach: handlers.acknowledge,
    bulkAcknowledgeGeofenceBreaches: handlers.bulkAcknowledge,
  };
}
