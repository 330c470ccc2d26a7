// The tracking service's events and the JetStream stream that keeps them. Subjects are not
// written here: each is the (meshwork.api.v1.event) option of its message in
// proto/tracking/v1/events.proto, read from the descriptors when this module loads, so a
// message without one stops the process at start-up.
import {
  AssetCreatedSchema,
  AssetDeletedSchema,
  AssetUpdatedSchema,
  DeviceCreatedSchema,
  DeviceDeletedSchema,
  DeviceUpdatedSchema,
  file_tracking_v1_events,
  GeofenceBreachAcknowledgedSchema,
  GeofenceBreachDetectedSchema,
  GeofenceCreatedSchema,
  GeofenceDeletedSchema,
  GeofenceUpdatedSchema,
  IntegrationFeedCreatedSchema,
  IntegrationFeedDeletedSchema,
  IntegrationFeedUpdatedSchema,
  ObservationRecordedSchema,
  SpeedAlertAcknowledgedSchema,
  SpeedAlertRaisedSchema,
  WebhookTestRequestedSchema,
} from "../../../gen/tracking/v1/events_pb.js";
import { type StreamDefinition, streamSubjects } from "../../runtime/bus/index.js";

export const trackingStream: StreamDefinition = { name: "TRACKING", subjects: [`${file_tracking_v1_events.proto.package}.>`] };

/** The event messages by the names code uses for them (a name, not a subject). */
export const trackingEvents = {
  assetCreated: AssetCreatedSchema,
  assetUpdated: AssetUpdatedSchema,
  assetDeleted: AssetDeletedSchema,
  deviceCreated: DeviceCreatedSchema,
  deviceUpdated: DeviceUpdatedSchema,
  deviceDeleted: DeviceDeletedSchema,
  observationRecorded: ObservationRecordedSchema,
  geofenceCreated: GeofenceCreatedSchema,
  geofenceUpdated: GeofenceUpdatedSchema,
  geofenceDeleted: GeofenceDeletedSchema,
  breachDetected: GeofenceBreachDetectedSchema,
  breachAcknowledged: GeofenceBreachAcknowledgedSchema,
  speedAlertRaised: SpeedAlertRaisedSchema,
  speedAlertAcknowledged: SpeedAlertAcknowledgedSchema,
  integrationFeedCreated: IntegrationFeedCreatedSchema,
  integrationFeedUpdated: IntegrationFeedUpdatedSchema,
  integrationFeedDeleted: IntegrationFeedDeletedSchema,
  webhookTestRequested: WebhookTestRequestedSchema,
} as const;

/** Each event's subject, under the same name as in trackingEvents (e.g. `subjects.breachDetected`). */
export const subjects = streamSubjects(file_tracking_v1_events, trackingStream, trackingEvents);
