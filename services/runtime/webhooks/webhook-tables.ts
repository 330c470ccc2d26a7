// Webhook tables: the delivery queue (one row per event and endpoint until it succeeds or fails
// for good), the attempt log, endpoint state shared by instances, and this database's consumer id.
import { EntitySchema } from "@mikro-orm/core";

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export interface WebhookDeliveryRow {
  id: string;
  eventId: string;
  /** Digest of the endpoint URL (see webhooks/webhook-endpoints.ts). */
  endpointKey: string;
  /** The URL without credentials. */
  endpoint: string;
  eventType: string;
  /** `msg_<event id>`: the same on every attempt. */
  webhookId: string;
  /** The exact JSON every attempt sends. */
  body: string;
  status: WebhookDeliveryStatus;
  /** Attempts started so far. */
  attemptCount: number;
  /** When the next attempt is due; while an attempt runs, when its lease ends. */
  nextAttemptAt: Date;
  /** Set while an instance holds the delivery for an attempt. */
  leaseToken: string | null;
  lastError: string | null;
  lastStatusCode: number | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface WebhookAttemptRow {
  id: string;
  deliveryId: string;
  eventId: string;
  attemptNumber: number;
  correlationId: string;
  eventType: string;
  endpoint: string;
  success: boolean;
  httpStatusCode: number | null;
  durationMs: number;
  error: string | null;
  createdAt: Date;
}

export interface WebhookEndpointStateRow {
  endpointKey: string;
  endpoint: string;
  disabledAt: Date | null;
  disabledReason: string | null;
  updatedAt: Date;
}

export interface WebhookConsumerRow {
  singleton: boolean;
  /** Names this database's durable consumers, so deployments sharing a NATS server never share one. */
  consumerId: string;
}

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export const WebhookDeliveryEntity = new EntitySchema<WebhookDeliveryRow>({
  name: "TrackingWebhookDelivery",
  tableName: "tracking_webhook_delivery",
  properties: {
    id: { type: "uuid", primary: true },
    eventId: { type: "uuid" },
    endpointKey: { type: "text" },
    endpoint: { type: "text" },
    eventType: { type: "text" },
    webhookId: { type: "text" },
    body: { type: "text" },
    status: { type: "text" },
    attemptCount: { type: "integer" },
    nextAttemptAt: { ...timestamptz },
    leaseToken: { type: "uuid", nullable: true },
    lastError: { type: "text", nullable: true },
    lastStatusCode: { type: "integer", nullable: true },
    createdAt: { ...timestamptz },
    updatedAt: { ...timestamptz },
    finishedAt: { ...timestamptz, nullable: true },
  },
});

export const WebhookAttemptEntity = new EntitySchema<WebhookAttemptRow>({
  name: "TrackingWebhookAttempt",
  tableName: "tracking_webhook_attempt",
  properties: {
    id: { type: "uuid", primary: true },
    deliveryId: { type: "uuid" },
    eventId: { type: "uuid" },
    attemptNumber: { type: "integer" },
    correlationId: { type: "text" },
    eventType: { type: "text" },
    endpoint: { type: "text" },
    success: { type: "boolean" },
    httpStatusCode: { type: "integer", nullable: true },
    durationMs: { type: "integer" },
    error: { type: "text", nullable: true },
    createdAt: { ...timestamptz },
  },
});

export const WebhookEndpointStateEntity = new EntitySchema<WebhookEndpointStateRow>({
  name: "TrackingWebhookEndpoint",
  tableName: "tracking_webhook_endpoint",
  properties: {
    endpointKey: { type: "text", primary: true },
    endpoint: { type: "text" },
    disabledAt: { ...timestamptz, nullable: true },
    disabledReason: { type: "text", nullable: true },
    updatedAt: { ...timestamptz },
  },
});

export const WebhookConsumerEntity = new EntitySchema<WebhookConsumerRow>({
  name: "TrackingWebhookConsumer",
  tableName: "tracking_webhook_consumer",
  properties: {
    singleton: { type: "boolean", primary: true },
    consumerId: { type: "uuid" },
  },
});
