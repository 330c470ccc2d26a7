// Subjects and the JetStream stream of the tracking service (`tracking.v1.<entity>.<verb>`).
// Each subject's payload is the message of the same name in proto/tracking/v1/events.proto.
import type { StreamDefinition } from "../../runtime/bus/index.js";

export const trackingStream: StreamDefinition = { name: "TRACKING", subjects: ["tracking.v1.>"] };

export const subjects = {
  assetCreated: "tracking.v1.asset.created",
  assetUpdated: "tracking.v1.asset.updated",
  assetDeleted: "tracking.v1.asset.deleted",
  deviceCreated: "tracking.v1.device.created",
  deviceUpdated: "tracking.v1.device.updated",
  deviceDeleted: "tracking.v1.device.deleted",
  observationRecorded: "tracking.v1.observation.recorded",
  geofenceCreated: "tracking.v1.geofence.created",
  geofenceUpdated: "tracking.v1.geofence.updated",
  geofenceDeleted: "tracking.v1.geofence.deleted",
  breachDetected: "tracking.v1.breach.detected",
  breachAcknowledged: "tracking.v1.breach.acknowledged",
  speedAlertRaised: "tracking.v1.speed_alert.raised",
  speedAlertAcknowledged: "tracking.v1.speed_alert.acknowledged",
  integrationFeedCreated: "tracking.v1.integration_feed.created",
  integrationFeedUpdated: "tracking.v1.integration_feed.updated",
  integrationFeedDeleted: "tracking.v1.integration_feed.deleted",
  webhookTestRequested: "tracking.v1.webhook.test_requested",
} as const;
