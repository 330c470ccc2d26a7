// Turns a tracking event into the webhook body `{ type, timestamp, data }`, data being the alert
// as the tracking front renders it (lowerCamelCase, every field present, unset optional ones null).
import { fromBinary, toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { GeofenceBreachSchema } from "../../../gen/tracking/v1/breach_pb.js";
import { GeofenceBreachDetectedSchema, SpeedAlertRaisedSchema, WebhookTestRequestedSchema } from "../../../gen/tracking/v1/events_pb.js";
import { SpeedAlertSchema } from "../../../gen/tracking/v1/speed_alert_pb.js";
import { isWebhookEventType, webhookSourceSubjects, type WebhookEventType } from "./event-types.js";

export interface WebhookEvent {
  eventId: string;
  type: WebhookEventType;
  /** The exact bytes every attempt sends (and signs). */
  body: string;
}

/** The webhook event a bus message stands for; undefined for subjects (or test types) webhooks ignore. */
export function toWebhookEvent(subject: string, data: Uint8Array): WebhookEvent | undefined {
  switch (subject) {
    case webhookSourceSubjects.speedAlert: {
      const event = fromBinary(SpeedAlertRaisedSchema, data);
      if (!event.speedAlert) return undefined;
      return build(event.eventId, "speed_alert", event.occurredAt, restJson(SpeedAlertSchema, event.speedAlert));
    }
    case webhookSourceSubjects.breach: {
      const event = fromBinary(GeofenceBreachDetectedSchema, data);
      if (!event.breach) return undefined;
      return build(event.eventId, "geofence_breach", event.occurredAt, restJson(GeofenceBreachSchema, event.breach));
    }
    case webhookSourceSubjects.test: {
      const event = fromBinary(WebhookTestRequestedSchema, data);
      if (!isWebhookEventType(event.eventType)) return undefined;
      const sample = event.sample;
      const json =
        sample.case === "speedAlert"
          ? restJson(SpeedAlertSchema, sample.value)
          : sample.case === "breach"
            ? restJson(GeofenceBreachSchema, sample.value)
            : {};
      return build(event.eventId, event.eventType, event.occurredAt, json);
    }
    default:
      return undefined;
  }
}

function build(eventId: string, type: WebhookEventType, occurredAt: Timestamp | undefined, data: JsonObject): WebhookEvent {
  const timestamp = (occurredAt ? timestampDate(occurredAt) : new Date()).toISOString();
  return { eventId, type, body: JSON.stringify({ type, timestamp, data }) };
}

// FeatureSet.FieldPresence.EXPLICIT: proto3 `optional` scalars and message fields.
const PRESENCE_EXPLICIT = 1;

/**
 * proto3 JSON as the REST fronts write it for services with emit_null_for_unset: implicit fields
 * always present, explicit-presence fields null when unset, in declaration order. The alerts hold
 * only scalars and timestamps, so one level is all there is to fill.
 */
export function restJson<S extends DescMessage>(schema: S, message: MessageShape<S>): JsonObject {
  const json = toJson(schema, message, { alwaysEmitImplicit: true }) as JsonObject;
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const value = json[field.jsonName];
    if (value !== undefined) out[field.jsonName] = value;
    else if (field.oneof === undefined && field.presence === PRESENCE_EXPLICIT) out[field.jsonName] = null;
  }
  return out;
}
