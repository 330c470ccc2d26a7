// The webhook body: `{ type, timestamp, data }` with data as the REST front writes the alert.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import test from "ava";
import { GeofenceBreachSchema } from "../../../gen/tracking/v1/breach_pb.js";
import {
  GeofenceBreachDetectedSchema,
  SpeedAlertAcknowledgedSchema,
  SpeedAlertRaisedSchema,
  WebhookTestRequestedSchema,
} from "../../../gen/tracking/v1/events_pb.js";
import { SpeedAlertSchema } from "../../../gen/tracking/v1/speed_alert_pb.js";
import { subjects } from "../events/subjects.js";
import { webhookBody } from "../../runtime/webhooks/index.js";
import { testSample } from "./test-event.js";
import { trackingWebhookSources } from "./webhook-payload.js";

/** What the delivery consumer makes of a bus message: the source of its subject renders it. */
function toWebhookEvent(subject: string, data: Uint8Array) {
  const message = { subject, data, id: "", headers: {}, seq: 1, stream: "TRACKING", timestamp: new Date(), redelivered: false };
  const rendered = trackingWebhookSources.find((s) => s.subject === subject)?.render(message);
  return rendered && { eventId: rendered.eventId, type: rendered.type, body: webhookBody(rendered) };
}

const occurredAt = new Date("2024-05-01T10:00:00.000Z");
const alert = create(SpeedAlertSchema, {
  id: "11111111-1111-4111-8111-111111111111",
  deviceId: "22222222-2222-4222-8222-222222222222",
  deviceIdentifier: "van-1",
  observationId: "33333333-3333-4333-8333-333333333333",
  speedKmh: 150.5,
  thresholdKmh: 120,
  latitude: 51.5,
  longitude: -0.12,
  occurredAt: timestampFromDate(occurredAt),
  createdAt: timestampFromDate(occurredAt),
});

test("a speed alert: lowerCamelCase, zero values written, unset optional fields null", (t) => {
  const data = toBinary(
    SpeedAlertRaisedSchema,
    create(SpeedAlertRaisedSchema, { eventId: "e1", occurredAt: timestampFromDate(occurredAt), speedAlert: alert }),
  );
  const event = toWebhookEvent(subjects.speedAlertRaised, data)!;
  t.is(event.type, "speed_alert");
  t.is(event.eventId, "e1");
  t.deepEqual(JSON.parse(event.body), {
    type: "speed_alert",
    timestamp: "2024-05-01T10:00:00.000Z",
    data: {
      id: "11111111-1111-4111-8111-111111111111",
      deviceId: "22222222-2222-4222-8222-222222222222",
      deviceIdentifier: "van-1",
      assetId: null,
      observationId: "33333333-3333-4333-8333-333333333333",
      speedKmh: 150.5,
      thresholdKmh: 120,
      latitude: 51.5,
      longitude: -0.12,
      occurredAt: "2024-05-01T10:00:00Z",
      acknowledged: false,
      acknowledgedBy: null,
      acknowledgedAt: null,
      createdAt: "2024-05-01T10:00:00Z",
    },
  });
});

test("a breach carries breachEventType", (t) => {
  const breach = create(GeofenceBreachSchema, {
    id: "b",
    deviceId: "d",
    geofenceId: "g",
    observationId: "o",
    breachEventType: "Exit",
    latitude: 1,
    longitude: 2,
  });
  const data = toBinary(
    GeofenceBreachDetectedSchema,
    create(GeofenceBreachDetectedSchema, { eventId: "e2", occurredAt: timestampFromDate(occurredAt), breach }),
  );
  const body = JSON.parse(toWebhookEvent(subjects.breachDetected, data)!.body);
  t.is(body.type, "geofence_breach");
  t.like(body.data, { breachEventType: "Exit", geofenceName: null, geofenceId: "g" });
});

test("a test request becomes an event of the requested type with its sample as data", (t) => {
  for (const type of ["speed_alert", "geofence_breach"] as const) {
    const message = create(WebhookTestRequestedSchema, {
      eventId: "e3",
      occurredAt: timestampFromDate(occurredAt),
      eventType: type,
      sample: testSample(type),
    });
    const event = toWebhookEvent(subjects.webhookTestRequested, toBinary(WebhookTestRequestedSchema, message))!;
    t.is(event.type, type);
    t.is(JSON.parse(event.body).data.deviceIdentifier, "webhook-test");
  }
});

test("other subjects are not webhook events", (t) => {
  const data = toBinary(SpeedAlertAcknowledgedSchema, create(SpeedAlertAcknowledgedSchema, { eventId: "e4", speedAlert: alert }));
  t.is(toWebhookEvent(subjects.speedAlertAcknowledged, data), undefined);
});
