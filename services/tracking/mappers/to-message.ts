// Row → protobuf message for every tracking resource. Nullable columns become unset optional
// fields, which the gateway writes as null.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AssetSchema, type Asset } from "../../../gen/tracking/v1/asset_pb.js";
import { GeofenceBreachSchema, type GeofenceBreach } from "../../../gen/tracking/v1/breach_pb.js";
import { DeviceSchema, type Device } from "../../../gen/tracking/v1/device_pb.js";
import { GeofenceSchema, type Geofence } from "../../../gen/tracking/v1/geofence_pb.js";
import { ObservationSchema, type Observation } from "../../../gen/tracking/v1/observation_pb.js";
import { SpeedAlertSchema, type SpeedAlert } from "../../../gen/tracking/v1/speed_alert_pb.js";
import type { BreachRow, SpeedAlertRow } from "../store/alert-entities.js";
import type { AssetRow } from "../store/asset-entity.js";
import type { DeviceRow } from "../store/device-entity.js";
import type { GeofenceRow } from "../store/geofence-entity.js";
import type { ObservationRow } from "../store/observation-entity.js";

const opt = <T>(value: T | null): T | undefined => value ?? undefined;
const ts = (value: Date | null) => (value ? timestampFromDate(value) : undefined);

export function toAsset(row: AssetRow): Asset {
  return create(AssetSchema, {
    id: row.id,
    name: opt(row.name),
    description: opt(row.description),
    category: opt(row.category),
    speedThresholdKmh: opt(row.speedThresholdKmh),
    createdAt: ts(row.createdAt),
    updatedAt: ts(row.updatedAt),
  });
}

export function toDevice(row: DeviceRow): Device {
  return create(DeviceSchema, {
    id: row.id,
    identifier: opt(row.identifier),
    label: opt(row.label),
    protocol: opt(row.protocol),
    assetId: opt(row.assetId),
    provider: opt(row.provider),
    externalId: opt(row.externalId),
    tags: opt(row.tags),
    integrationFeedId: opt(row.integrationFeedId),
    lastSeenAt: ts(row.lastSeenAt),
    createdAt: ts(row.createdAt),
    updatedAt: ts(row.updatedAt),
  });
}

export function toObservation(row: ObservationRow): Observation {
  return create(ObservationSchema, {
    id: row.id,
    deviceId: row.deviceId,
    observedAt: ts(row.observedAt),
    latitude: row.latitude,
    longitude: row.longitude,
    altitude: opt(row.altitude),
    accuracyMeters: opt(row.accuracyMeters),
    speedKmh: opt(row.speedKmh),
    headingDegrees: opt(row.headingDegrees),
    metadata: opt(row.metadata),
    source: row.source,
    receivedAt: ts(row.receivedAt),
  });
}

export function toGeofence(row: GeofenceRow): Geofence {
  return create(GeofenceSchema, {
    id: row.id,
    name: opt(row.name),
    description: opt(row.description),
    centerLatitude: row.centerLatitude,
    centerLongitude: row.centerLongitude,
    radiusMeters: row.radiusMeters,
    isActive: row.isActive,
    createdAt: ts(row.createdAt),
    updatedAt: ts(row.updatedAt),
  });
}

/** Names shown next to an alert; looked up by the caller, absent when unknown. */
export interface AlertNames {
  deviceIdentifier?: string | null;
  geofenceName?: string | null;
}

function alertColumns(row: BreachRow | SpeedAlertRow, names: AlertNames) {
  return {
    id: row.id,
    deviceId: row.deviceId,
    deviceIdentifier: opt(names.deviceIdentifier ?? null),
    assetId: opt(row.assetId),
    observationId: row.observationId,
    latitude: row.latitude,
    longitude: row.longitude,
    occurredAt: ts(row.occurredAt),
    acknowledged: row.acknowledged,
    acknowledgedBy: opt(row.acknowledgedBy),
    acknowledgedAt: ts(row.acknowledgedAt),
    createdAt: ts(row.createdAt),
  };
}

export function toBreach(row: BreachRow, names: AlertNames = {}): GeofenceBreach {
  return create(GeofenceBreachSchema, {
    ...alertColumns(row, names),
    geofenceId: row.geofenceId,
    geofenceName: opt(names.geofenceName ?? null),
    breachEventType: row.breachEventType,
  });
}

export function toSpeedAlert(row: SpeedAlertRow, names: AlertNames = {}): SpeedAlert {
  return create(SpeedAlertSchema, {
    ...alertColumns(row, names),
    speedKmh: row.speedKmh,
    thresholdKmh: row.thresholdKmh,
  });
}
