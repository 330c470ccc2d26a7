// Breach and speed-alert tables. Both are append-only records of an event plus an
// acknowledgement that is written once.
import { EntitySchema } from "@mikro-orm/core";

interface AlertColumns {
  id: string;
  deviceId: string;
  assetId: string | null;
  observationId: string;
  latitude: number;
  longitude: number;
  occurredAt: Date;
  acknowledged: boolean;
  acknowledgedBy: string | null;
  acknowledgedAt: Date | null;
  createdAt: Date;
}

export interface BreachRow extends AlertColumns {
  geofenceId: string;
  /** "Enter" or "Exit". */
  breachEventType: string;
}

export interface SpeedAlertRow extends AlertColumns {
  speedKmh: number;
  thresholdKmh: number;
}

const double = { type: "number", columnType: "double precision" } as const;

const alertProperties = {
  id: { type: "uuid", primary: true },
  deviceId: { type: "uuid" },
  assetId: { type: "uuid", nullable: true },
  observationId: { type: "uuid" },
  latitude: { ...double },
  longitude: { ...double },
  occurredAt: { type: "Date", columnType: "timestamptz" },
  acknowledged: { type: "boolean", default: false },
  acknowledgedBy: { type: "text", nullable: true },
  acknowledgedAt: { type: "Date", columnType: "timestamptz", nullable: true },
  createdAt: { type: "Date", columnType: "timestamptz" },
} as const;

export const BreachEntity = new EntitySchema<BreachRow>({
  name: "TrackingGeofenceBreach",
  tableName: "tracking_geofence_breach",
  properties: {
    ...alertProperties,
    geofenceId: { type: "uuid" },
    breachEventType: { type: "text" },
  },
});

export const SpeedAlertEntity = new EntitySchema<SpeedAlertRow>({
  name: "TrackingSpeedAlert",
  tableName: "tracking_speed_alert",
  properties: {
    ...alertProperties,
    speedKmh: { ...double },
    thresholdKmh: { ...double },
  },
});
