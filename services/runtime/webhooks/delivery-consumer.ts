// Durable bus consumers that turn the module's events into pending deliveries, one per endpoint
// that takes the event's type, then ack. A redelivered event inserts nothing new (unique on event
// and endpoint), so the queue holds each (event, endpoint) once whatever the bus repeats.
import type { BusMessage, EventBus, Stoppable } from "../bus/index.js";
import type { Database } from "../database/index.js";
import { OUTBOX_ROW_HEADER } from "../outbox/index.js";
import { insertDeliveries } from "./delivery-store.js";
import { webhookBody, type WebhookSource } from "./webhook-source.js";
import { takesEvent, type WebhookEndpoint } from "./webhook-endpoints.js";
import type { WebhookTableNames } from "./webhook-tables.js";

export interface DeliveryConsumerOptions {
  bus: EventBus;
  db: Database;
  tables: WebhookTableNames;
  endpoints: readonly WebhookEndpoint[];
  /** The JetStream stream the sources' subjects are published on. */
  stream: string;
  sources: readonly WebhookSource[];
  /** Names the durables: `<name>-webhooks-<consumer id>-<source name>`. */
  name: string;
  /** Unique per database (see the consumer table), so deployments sharing a NATS server never share a durable. */
  consumerId: string;
  /** Called after deliveries were queued, so the local dispatcher need not wait for its poll. */
  onQueued(): void;
}

/**
 * One durable per source subject: NATS 2.9 allows one filter subject per consumer, and a single
 * durable on the whole stream would pull (and ack) every other event only to drop it.
 */
export async function startDeliveryConsumers(options: DeliveryConsumerOptions): Promise<Stoppable> {
  const { bus, db, endpoints, tables } = options;
  const prefix = `${options.name}-webhooks-${options.consumerId.replace(/-/g, "").slice(0, 16)}`;
  const handler = async (source: WebhookSource, message: BusMessage): Promise<void> => {
    const rendered = source.render(message);
    if (!rendered) return;
    const targets = endpoints.filter((e) => takesEvent(e, rendered.type)).map((e) => ({ key: e.key, display: e.display }));
    if (targets.length === 0) return;
    const outboxRow = message.headers[OUTBOX_ROW_HEADER];
    const event = { eventId: rendered.eventId, type: rendered.type, body: webhookBody(rendered), ...(outboxRow ? { outboxRow } : {}) };
    const created = await insertDeliveries(tables, db.em(), event, targets);
    if (created > 0) options.onQueued();
  };
  const running: Stoppable[] = [];
  try {
    for (const source of options.sources) {
      running.push(
        await bus.consume(
          {
            stream: options.stream,
            durable: `${prefix}-${source.name}`,
            filterSubjects: [source.subject],
            // On NATS a new durable starts at the tail: enabling webhooks does not replay the stream's
            // history of events to the new endpoints. The in-process bus starts empty with the process,
            // so reading it from its first message loses nothing the outbox published before this.
            deliverFrom: bus.kind === "nats" ? "new" : "all",
          },
          (m) => handler(source, m),
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
