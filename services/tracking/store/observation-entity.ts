// The tracking_observation table. asset_id is the device's asset when the observation was
// recorded, so history by asset needs no join and stays right after a device changes asset.
import { EntitySchema } from "@mikro-orm/core";

export interface ObservationRow {
  id: string;
  deviceId: string;
  assetId: string | null;
  observedAt: Date;
  latitude: number;
  longitude: number;
  altitude: number | null;
  accuracyMeters: number | null;
  speedKmh: number | null;
  headingDegrees: number | null;
  metadata: string | null;
  source: string;
  receivedAt: Date;
}

const double = { type: "number", columnType: "double precision" } as const;

export const ObservationEntity = new EntitySchema<ObservationRow>({
  name: "TrackingObservation",
  tableName: "tracking_observation",
  properties: {
    id: { type: "uuid", primary: true },
    deviceId: { type: "uuid" },
    assetId: { type: "uuid", nullable: true },
    observedAt: { type: "Date", columnType: "timestamptz" },
    latitude: { ...double },
    longitude: { ...double },
    altitude: { ...double, nullable: true },
    accuracyMeters: { ...double, nullable: true },
    speedKmh: { ...double, nullable: true },
    headingDegrees: { ...double, nullable: true },
    metadata: { type: "text", nullable: true },
    source: { type: "text" },
    receivedAt: { type: "Date", columnType: "timestamptz" },
  },
});
