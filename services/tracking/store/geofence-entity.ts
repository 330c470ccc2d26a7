// The tracking_geofence table and the per (device, geofence) inside/outside state.
import { EntitySchema } from "@mikro-orm/core";

export interface GeofenceRow {
  id: string;
  name: string | null;
  description: string | null;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
  isActive: boolean;
  isSeeded: boolean;
  createdAt: Date;
  updatedAt: Date;
}

const double = { type: "number", columnType: "double precision" } as const;

export const GeofenceEntity = new EntitySchema<GeofenceRow>({
  name: "TrackingGeofence",
  tableName: "tracking_geofence",
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text", nullable: true },
    description: { type: "text", nullable: true },
    centerLatitude: { ...double },
    centerLongitude: { ...double },
    radiusMeters: { ...double },
    isActive: { type: "boolean" },
    isSeeded: { type: "boolean", default: false },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});

export interface GeofenceStateRow {
  deviceId: string;
  geofenceId: string;
  inside: boolean;
  /** observedAt of the observation that last set this state. */
  observedAt: Date;
}

export const GeofenceStateEntity = new EntitySchema<GeofenceStateRow>({
  name: "TrackingGeofenceState",
  tableName: "tracking_geofence_state",
  properties: {
    deviceId: { type: "uuid", primary: true },
    geofenceId: { type: "uuid", primary: true },
    inside: { type: "boolean" },
    observedAt: { type: "Date", columnType: "timestamptz" },
  },
});
