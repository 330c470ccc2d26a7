// tracking.v1.SpeedAlertService handlers: the filtered list (JSON page or CSV file) and
// acknowledgement, one or in bulk. Speed alerts themselves are written by the observation engine.
import type { ServiceImpl } from "@connectrpc/connect";
import { SpeedAlertAcknowledgedSchema } from "../../gen/tracking/v1/events_pb.js";
import type { SpeedAlertService } from "../../gen/tracking/v1/speed_alert_pb.js";
import { alertHandlers } from "./alert-handlers.js";
import { toSpeedAlert } from "./mappers/to-message.js";
import { SpeedAlertEntity } from "./store/alert-entities.js";
import type { TrackingDeps } from "./deps.js";

export function speedAlertService(deps: TrackingDeps): ServiceImpl<typeof SpeedAlertService> {
  const handlers = alertHandlers(deps, {
    entity: SpeedAlertEntity,
    noun: "speed alert",
    filename: "speed-alerts.csv",
    // The columns ListSpeedAlerts documents for format=csv.
    csvHeader: [
      "Id",
      "DeviceId",
      "DeviceIdentifier",
      "AssetId",
      "SpeedKmh",
      "ThresholdKmh",
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
      row.speedKmh,
      row.thresholdKmh,
      row.latitude,
      row.longitude,
      row.occurredAt,
      row.acknowledged,
      row.acknowledgedBy,
      row.acknowledgedAt,
    ],
    toMessage: toSpeedAlert,
    recordAcknowledged: (tx, speedAlert) => {
      tx.record(SpeedAlertAcknowledgedSchema, { speedAlert });
    },
  });
  return {
    listSpeedAlerts: handlers.list,
    acknowledgeSpeedAlert: handlers.acknowledge,
    bulkAcknowledgeSpeedAlerts: handlers.bulkAcknowledge,
  };
}
