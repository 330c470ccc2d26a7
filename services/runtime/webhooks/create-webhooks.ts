// Durable, signed webhooks for the tracking service: configuration checked at start-up, bus
// consumers that queue deliveries in PostgreSQL, and the dispatcher that sends them.
import { createRequire } from "node:module";
import type { Stoppable } from "../../runtime/bus/index.js";
import type { ModuleDeps } from "../../runtime/module/index.js";
import { startDeliveryConsumers } from "./delivery-consumer.js";
import { consumerId } from "./delivery-store.js";
import { startDispatcher, type Dispatcher } from "./dispatcher.js";
import { createHttpSender } from "./http-sender.js";
import { resolveWebhookEndpoints, type WebhookEndpoint } from "./webhook-endpoints.js";

export { isWebhookEventType, webhookEventTypes, type WebhookEventType } from "./event-types.js";
export { deliveryStats, disabledEndpoints } from "./delivery-store.js";
export { takesEvent, type WebhookEndpoint } from "./webhook-endpoints.js";
export { testSample } from "./test-event.js";

/** Attempts in flight per instance. */
const concurrency = 32;
/** How often an idle dispatcher looks for work queued by other instances. */
const pollIntervalMs = 1_000;

const version = (createRequire(import.meta.url)("../../../package.json") as { version: string }).version;

export interface Webhooks {
  readonly endpoints: readonly WebhookEndpoint[];
  readonly signingEnabled: boolean;
  /** Starts the consumers and the dispatcher; nothing runs (and nothing is recorded) without endpoints. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Checks the configuration now (a ConfigError names the bad endpoint), so a bad one stops start-up early. */
export function createWebhooks(deps: ModuleDeps): Webhooks {
  const settings = deps.config.webhooks;
  const endpoints = resolveWebhookEndpoints(settings);
  const logger = deps.logger.child({ component: "webhooks" });
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
    async start() {
      if (endpoints.length === 0) return;
      if (!settings.signingEnabled)
        logger.warn("webhook signing is off (Webhooks:SigningEnabled=false): receivers cannot tell our deliveries from forgeries");
      sender = createHttpSender({
        policy: { allowLoopback: settings.allowLoopback, allowPrivateNetworks: settings.allowPrivateNetworks },
        maxSockets: concurrency,
      });
      dispatcher = startDispatcher({
        db: deps.db,
        logger: deps.logger,
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
          bus: deps.bus,
          db: deps.db,
          endpoints,
          consumerId: await consumerId(deps.db.em()),
          onQueued: () => running.wake(),
        });
      } catch (err) {
        await stop();
        throw err;
      }
      logger.info({ endpoints: endpoints.map((e) => e.display), signing: settings.signingEnabled }, "webhook delivery started");
    },
    stop,
  };
}
