// Durable, signed webhooks for a module: endpoints checked at start-up, bus consumers that queue
// deliveries in PostgreSQL, the dispatcher that sends them, and what the module's API reports.
import type { FilterQuery } from "@mikro-orm/core";
import { createRequire } from "node:module";
import type { Logger } from "pino";
import type { EventBus, Stoppable } from "../bus/index.js";
import { findPage, type Database } from "../database/index.js";
import { startDeliveryConsumers } from "./delivery-consumer.js";
import { consumerId, deliveryStats, disabledEndpoints, type DeliveryStats } from "./delivery-store.js";
import { startDispatcher, type Dispatcher } from "./dispatcher.js";
import { createHttpSender } from "./http-sender.js";
import { resolveWebhookEndpoints, takesEvent, type WebhookEndpoint, type WebhookEndpointSettings } from "./webhook-endpoints.js";
import type { WebhookSource } from "./webhook-source.js";
import type { WebhookAttemptRow, WebhookTables } from "./webhook-tables.js";

/** Attempts in flight per instance. */
const concurrency = 32;
/** How often an idle dispatcher looks for work queued by other instances. */
const pollIntervalMs = 1_000;

const version = (createRequire(import.meta.url)("../../../package.json") as { version: string }).version;

export interface WebhookSettings {
  endpoints: readonly WebhookEndpointSettings[];
  signingEnabled: boolean;
  timeoutSeconds: number;
  maxAttempts: number;
  retryInitialDelayMs: number;
  retryMaxDelayMs: number;
  allowLoopback: boolean;
  allowPrivateNetworks: boolean;
}

export interface WebhooksOptions {
  /** The module's name: it prefixes the durable consumers. */
  name: string;
  settings: WebhookSettings;
  /** Where the settings live, for messages (e.g. `Webhooks`: `Webhooks:Endpoints item 1 ...`). */
  settingsSection: string;
  /** The event types the module sends, as endpoints list them. */
  eventTypes: readonly string[];
  /** The bus stream the sources' subjects are on. */
  stream: string;
  sources: readonly WebhookSource[];
  tables: WebhookTables;
  db: Database;
  bus: EventBus;
  logger: Logger;
}

export interface AttemptQuery {
  success?: boolean;
  eventType?: string;
  since?: Date;
  limit: number;
  offset: number;
}

export interface Webhooks {
  readonly endpoints: readonly WebhookEndpoint[];
  readonly signingEnabled: boolean;
  /** How many configured endpoints take events of this type. */
  takers(type: string): number;
  /** Starts the consumers and the dispatcher; nothing runs (and nothing is recorded) without endpoints. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The attempt log, newest first. */
  attempts(query: AttemptQuery): Promise<{ rows: WebhookAttemptRow[]; totalCount: number }>;
  /** The last 24 hours, and the queue now. */
  stats(): Promise<DeliveryStats>;
  /** URLs (as shown) of configured endpoints disabled after a 410 Gone; removed ones are no one's concern. */
  disabledEndpoints(): Promise<string[]>;
}

/** Checks the endpoints now (a WebhookSettingsError names the bad one), so a bad one stops start-up early. */
export function createWebhooks(options: WebhooksOptions): Webhooks {
  const { settings, db, tables } = options;
  const endpoints = resolveWebhookEndpoints({
    endpoints: settings.endpoints,
    signingEnabled: settings.signingEnabled,
    eventTypes: options.eventTypes,
    settingsSection: options.settingsSection,
  });
  const logger = options.logger.child({ component: "webhooks" });
  let consumers: Stoppable | undefined;
  let dispatcher: Dispatcher | undefined;
  let sender: ReturnType<typeof createHttpSender> | undefined;

  async function stop(): Promise<void> {
    // Consumers first: nothing new is queued while the dispatcher winds down.
    await consumers?.stop();
    await dispatcher?.stop();
    sender?.close();
    consumers = dispatcher = sender = undefined;
  }

  return {
    endpoints,
    signingEnabled: settings.signingEnabled,
    takers: (type) => endpoints.filter((e) => takesEvent(e, type)).length,
    async start() {
      if (endpoints.length === 0) return;
      if (!settings.signingEnabled)
        logger.warn(
          `webhook signing is off (${options.settingsSection}:SigningEnabled=false): receivers cannot tell our deliveries from forgeries`,
        );
      sender = createHttpSender({
        policy: {
          allowLoopback: settings.allowLoopback,
          allowPrivateNetworks: settings.allowPrivateNetworks,
          settingsSection: options.settingsSection,
        },
        maxSockets: concurrency,
      });
      dispatcher = startDispatcher({
        db,
        tables: tables.names,
        logger: options.logger,
        sender,
        endpoints,
        timeoutSeconds: settings.timeoutSeconds,
        maxAttempts: settings.maxAttempts,
        backoff: { initialDelayMs: settings.retryInitialDelayMs, maxDelayMs: settings.retryMaxDelayMs },
        concurrency,
        pollIntervalMs,
        userAgent: `Meshwork-Webhooks/${version}`,
      });
      const running = dispatcher;
      try {
        consumers = await startDeliveryConsumers({
          bus: options.bus,
          db,
          tables: tables.names,
          endpoints,
          stream: options.stream,
          sources: options.sources,
          name: options.name,
          consumerId: await consumerId(tables.names, db.em()),
          onQueued: () => running.wake(),
        });
      } catch (err) {
        await stop();
        throw err;
      }
      logger.info({ endpoints: endpoints.map((e) => e.display), signing: settings.signingEnabled }, "webhook delivery started");
    },
    stop,

    async attempts(query) {
      const where: FilterQuery<WebhookAttemptRow> = {};
      if (query.success !== undefined) where.success = query.success;
      if (query.eventType !== undefined) where.eventType = query.eventType;
      if (query.since !== undefined) where.createdAt = { $gte: query.since };
      const { rows, total } = await findPage(db.em(), tables.attemptEntity, where, {
        orderBy: { createdAt: "desc", id: "desc" },
        limit: query.limit,
        offset: query.offset,
      });
      return { rows, totalCount: total };
    },

    stats: () => deliveryStats(tables.names, db.em()),

    async disabledEndpoints() {
      const configured = new Set(endpoints.map((e) => e.key));
      const disabled = await disabledEndpoints(tables.names, db.em());
      return disabled.filter((d) => configured.has(d.key)).map((d) => d.endpoint);
    },
  };
}
