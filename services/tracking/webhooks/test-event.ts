// The made-up alerts POST /api/webhooks/test sends: shaped like real ones, recognisable as tests
// (device identifier `webhook-test`), pointing at nothing that exists.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { randomUUID } from "node:crypto";
import { GeofenceBreachSchema } from "../../../gen/tracking/v1/breach_pb.js";
import type { WebhookTestRequested } from "../../../gen/tracking/v1/events_pb.js";
import { SpeedAlertSchema } from "../../../gen/tracking/v1/speed_alert_pb.js";
import type { WebhookEventType } from "./event-types.js";

export const testDeviceIdentifier = "webhook-test";

export function testSample(type: WebhookEventType, now = new Date()): WebhookTestRequested["sample"] {
  const at = timestampFromDate(now);
  const common = {
    id: randomUUID(),
    deviceId: randomUUID(),
    deviceIdentifier: testDeviceIdentifier,
    observationId: randomUUID(),
    latitude: 51.5074,
    longitude: -0.1278,
    occurredAt: at,
    acknowledged: false,
    createdAt: at,
  };
  if (type === "speed_alert") {
    return { case: "speedAlert", value: create(SpeedAlertSchema, { ...common, speedKmh: 150, thresholdKmh: 120 }) };
  }
  return {
    case: "breach",
    value: create(GeofenceBreachSchema, {
      ...common,
      geofenceId: randomUUID(),
      geofenceName: "Webhook test fence",
      breachEventType: "Enter",
    }),
  };
}
