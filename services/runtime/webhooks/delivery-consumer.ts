// Durable bus consumers that turn alert events into pending deliveries, one per endpoint that
// takes the event's type, then ack. A redelivered event inserts nothing new (unique on event and
// endpoint), so the queue holds each (event, endpoint) once whatever the bus repeats.
import type { EventBus, Stoppable } from "../../runtime/bus/index.js";
import type { Database } from "../../runtime/database/index.js";
import { trackingStream } from "../events/subjects.js";
import { insertDeliveries } from "./delivery-store.js";
import { webhookSourceSubjects } from "./event-types.js";
import { takesEvent, type WebhookEndpoint } from "./webhook-endpoints.js";
import { toWebhookEvent } from "./webhook-payload.js";

export interface DeliveryConsumerOptions {
  bus: EventBus;
  db: Database;
  endpoints: readonly WebhookEndpoint[];
  /** Names the durables; unique per database (see tracking_webhook_consumer). */
  consumerId: string;
  /** Called after deliveries were queued, so the local dispatcher need not wait for its poll. */
  onQueued(): void;
}

/**
 * One durable per subject: NATS 2.9 allows one filter subject per consumer, and a single
 * `tracking.v1.>` durable would pull (and ack) every observation only to drop it.
 */
export async function startDeliveryConsumers(options: DeliveryConsumerOptions): Promise<Stoppable> {
  const { bus, db, endpoints } = options;
  const prefix = `tracking-webhooks-${options.consumerId.replace(/-/g, "").slice(0, 16)}`;
  const sources = [
    { subject: webhookSourceSubjects.speedAlert, name: "speed-alerts" },
    { subject: webhookSourceSubjects.breach, name: "breaches" },
    { subject: webhookSourceSubjects.test, name: "tests" },
  ];
  const handler = async (subject: string, data: Uint8Array): Promise<void> => {
    const event = toWebhookEvent(subject, data);
    if (!event) return;
    const targets = endpoints.filter((e) => takesEvent(e, event.type)).map((e) => ({ key: e.key, display: e.display }));
    if (targets.length === 0) return;
    const created = await insertDeliveries(db.em(), event, targets);
    if (created > 0) options.onQueued();
  };
  const running: Stoppable[] = [];
  try {
    for (const source of sources) {
      running.push(
        await bus.consume(
          {
            stream: trackingStream.name,
            durable: `${prefix}-${source.name}`,
            filterSubjects: [source.subject],
            // On NATS a new durable starts at the tail: enabling webhooks does not replay the stream's
            // history of alerts to the new endpoints. The in-process bus starts empty with the process,
            // so reading it from its first message loses nothing the outbox published before this.
            deliverFrom: bus.kind === "nats" ? "new" : "all",
          },
          (m) => handler(m.subject, m.data),
        ),
      );
    }
  } catch (err) {
    await Promise.allSettled(running.map((r) => r.stop()));
    throw err;
  }
  return {
    async stop() {
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}
