// The tracking_integration_feed table, served by IntegrationService. Devices may name a feed
// (ON DELETE SET NULL). configuration_json holds the real secrets: read it only through
// mappers/to-integration-feed.ts, which masks them.
import { EntitySchema } from "@mikro-orm/core";

export interface IntegrationFeedRow {
  id: string;
  name: string | null;
  provider: string | null;
  isEnabled: boolean;
  autoCreateDevices: boolean;
  defaultTags: string | null;
  configurationJson: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const IntegrationFeedEntity = new EntitySchema<IntegrationFeedRow>({
  name: "TrackingIntegrationFeed",
  tableName: "tracking_integration_feed",
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text", nullable: true },
    provider: { type: "text", nullable: true },
    isEnabled: { type: "boolean" },
    autoCreateDevices: { type: "boolean" },
    defaultTags: { type: "text", nullable: true },
    configurationJson: { type: "text", nullable: true },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});
