// The tracking_device table.
import { EntitySchema } from "@mikro-orm/core";

export interface DeviceRow {
  id: string;
  identifier: string | null;
  label: string | null;
  protocol: string | null;
  assetId: string | null;
  provider: string | null;
  externalId: string | null;
  tags: string | null;
  integrationFeedId: string | null;
  /** observedAt of the newest observation processed; older ones do not move geofence state. */
  lastSeenAt: Date | null;
  isSeeded: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const DeviceEntity = new EntitySchema<DeviceRow>({
  name: "TrackingDevice",
  tableName: "tracking_device",
  properties: {
    id: { type: "uuid", primary: true },
    identifier: { type: "text", nullable: true },
    label: { type: "text", nullable: true },
    protocol: { type: "text", nullable: true },
    assetId: { type: "uuid", nullable: true },
    provider: { type: "text", nullable: true },
    externalId: { type: "text", nullable: true },
    tags: { type: "text", nullable: true },
    integrationFeedId: { type: "uuid", nullable: true },
    lastSeenAt: { type: "Date", columnType: "timestamptz", nullable: true },
    isSeeded: { type: "boolean", default: false },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});
