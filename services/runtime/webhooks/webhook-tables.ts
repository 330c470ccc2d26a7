// Webhook tables: the delivery queue (one row per event and endpoint until it succeeds or fails
// for good), the attempt log, endpoint state shared by instances, and this database's consumer id.
// Each module that sends webhooks has its own set under its own prefix, created by a migration it
// lists under its own name: its deliveries, log and endpoint state stay its own (a module may
// run in its own process against its own database), and tables a module already had keep their
// names and rows.
import { type Constructor, EntitySchema } from "@mikro-orm/core";
import type { Migration } from "@mikro-orm/migrations";
import { webhookTablesMigration } from "./migrations/webhooks-0001-tables.js";

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export interface WebhookDeliveryRow {
  id: string;
  eventId: string;
  /** Digest of the endpoint URL (see webhook-endpoints.ts). */
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

export interface WebhookTableNames {
  delivery: string;
  attempt: string;
  endpoint: string;
  consumer: string;
}

export interface WebhookTables {
  /** Table names start with `${prefix}_`. */
  prefix: string;
  names: WebhookTableNames;
  // biome-ignore lint/suspicious/noExplicitAny: EntitySchema is invariant; the database module takes any
  entities: EntitySchema<any, any>[];
  attemptEntity: EntitySchema<WebhookAttemptRow>;
  /**
   * In order; the module lists each under a name of its own (`<module>-...`), and appends the ones
   * a later version of this library adds.
   */
  migrations: Constructor<Migration>[];
}

const PREFIX = /^[a-z][a-z0-9_]{0,40}$/;

/** The tables of one module, e.g. `webhookTables("billing_webhook")`: billing_webhook_delivery, ... */
export function webhookTables(prefix: string): WebhookTables {
  // The prefix goes into SQL text as an identifier: only a plain lower-case name is taken.
  if (!PREFIX.test(prefix)) throw new Error(`webhook table prefix "${prefix}" must be a lower-case SQL name`);
  const entityPrefix = prefix
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  const delivery = new EntitySchema<WebhookDeliveryRow>({
    name: `${entityPrefix}Delivery`,
    tableName: `${prefix}_delivery`,
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

  const attempt = new EntitySchema<WebhookAttemptRow>({
    name: `${entityPrefix}Attempt`,
    tableName: `${prefix}_attempt`,
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

  const endpoint = new EntitySchema<WebhookEndpointStateRow>({
    name: `${entityPrefix}Endpoint`,
    tableName: `${prefix}_endpoint`,
    properties: {
      endpointKey: { type: "text", primary: true },
      endpoint: { type: "text" },
      disabledAt: { ...timestamptz, nullable: true },
      disabledReason: { type: "text", nullable: true },
      updatedAt: { ...timestamptz },
    },
  });

  const consumer = new EntitySchema<WebhookConsumerRow>({
    name: `${entityPrefix}Consumer`,
    tableName: `${prefix}_consumer`,
    properties: {
      singleton: { type: "boolean", primary: true },
      consumerId: { type: "uuid" },
    },
  });
  return {
    prefix,
    names: { delivery: `${prefix}_delivery`, attempt: `${prefix}_attempt`, endpoint: `${prefix}_endpoint`, consumer: `${prefix}_consumer` },
    entities: [delivery, attempt, endpoint, consumer],
    attemptEntity: attempt,
    migrations: [webhookTablesMigration(prefix)],
  };
}
