// The webhook event types receivers see, and which tracking subject each one comes from.
import { subjects } from "../events/subjects.js";

export const webhookEventTypes = ["speed_alert", "geofence_breach"] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (webhookEventTypes as readonly string[]).includes(value);
}

/** The subjects the delivery consumer reads; every other tracking event is of no interest here. */
export const webhookSourceSubjects = {
  speedAlert: subjects.speedAlertRaised,
  breach: subjects.breachDetected,
  test: subjects.webhookTestRequested,
} as const;
