// Subjects and the JetStream stream of the tracking service (`tracking.v1.<entity>.<verb>`).
import type { StreamDefinition } from "../../runtime/bus/index.js";

export const trackingStream: StreamDefinition = { name: "TRACKING", subjects: ["tracking.v1.>"] };

export const subjects = {
  assetCreated: "tracking.v1.asset.created",
  assetUpdated: "tracking.v1.asset.updated",
  assetDeleted: "tracking.v1.asset.deleted",
} as const;
