// Which tracking events become webhooks, and their `data`: the alert as the tracking front
// renders it (lowerCamelCase, every field present, unset optional ones null).
import { fromBinary, toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { GeofenceBreachSchema } from "../../../gen/tracking/v1/breach_pb.js";
import { GeofenceBreachDetectedSchema, SpeedAlertRaisedSchema, WebhookTestRequestedSchema } from "../../../gen/tracking/v1/events_pb.js";
import { SpeedAlertSchema } from "../../../gen/tracking/v1/speed_alert_pb.js";
import type { RenderedWebhookEvent, WebhookSource } from "../../runtime/webhooks/index.js";
import { isWebhookEventType, webhookSourceSubjects, type WebhookEventType } from "./event-types.js";

/** Tracking's webhook sources: the subjects that feed them and how each event renders. */
export const trackingWebhookSources: readonly WebhookSource[] = [
  {
    subject: webhookSourceSubjects.speedAlert,
    name: "speed-alerts",
    render({ data }) {
      const event = fromBinary(SpeedAlertRaisedSchema, data);
      if (!event.speedAlert) return undefined;
      return rendered(event.eventId, "speed_alert", event.occurredAt, restJson(SpeedAlertSchema, event.speedAlert));
    },
  },
  {
    subject: webhookSourceSubjects.breach,
    name: "breaches",
    render({ data }) {
      const event = fromBinary(GeofenceBreachDetectedSchema, data);
      if (!event.breach) return undefined;
      return rendered(event.eventId, "geofence_breach", event.occurredAt, restJson(GeofenceBreachSchema, event.breach));
    },
  },
  {
    subject: webhookSourceSubjects.test,
    name: "tests",
    render({ data }) {
      const event = fromBinary(WebhookTestRequestedSchema, data);
      if (!isWebhookEventType(event.eventType)) return undefined;
      const sample = event.sample;
      const json =
        sample.case === "speedAlert"
          ? restJson(SpeedAlertSchema, sample.value)
          : sample.case === "breach"
            ? restJson(GeofenceBreachSchema, sample.value)
            : {};
      return rendered(event.eventId, event.eventType, event.occurredAt, json);
    },
  },
];

function rendered(eventId: string, type: WebhookEventType, occurredAt: Timestamp | undefined, data: JsonObject): RenderedWebhookEvent {
  return { eventId, type, occurredAt: occurredAt ? timestampDate(occurredAt) : new Date(), data };
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
