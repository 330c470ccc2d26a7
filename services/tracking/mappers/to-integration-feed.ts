// Feed row → tracking.v1.IntegrationFeed, with the configuration's secrets masked. Every answer
// and every event goes through here, so no path can hand out a stored secret.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { IntegrationFeedSchema, type IntegrationFeed } from "../../../gen/tracking/v1/integration_pb.js";
import { maskConfigurationText } from "../domain/integration-secrets.js";
import type { IntegrationFeedRow } from "../store/integration-feed-entity.js";

export function toIntegrationFeed(row: IntegrationFeedRow): IntegrationFeed {
  return create(IntegrationFeedSchema, {
    id: row.id,
    name: row.name ?? undefined,
    provider: row.provider ?? undefined,
    isEnabled: row.isEnabled,
    autoCreateDevices: row.autoCreateDevices,
    defaultTags: row.defaultTags ?? undefined,
    configurationJson: maskConfigurationText(row.configurationJson) ?? undefined,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}
