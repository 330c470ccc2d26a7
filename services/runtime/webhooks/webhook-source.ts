// What a module tells the library about its events: which bus subjects feed webhooks, and how one
// event renders. The body every receiver gets is `{ type, timestamp, data }`.
import type { JsonValue } from "@bufbuild/protobuf";
import type { BusMessage } from "../bus/index.js";

export interface RenderedWebhookEvent {
  /**
   * The event's id (the bus message's, `message.id`, or the one its payload carries): `webhook-id`
   * is `msg_<eventId>`, the same on every attempt, and only events recorded in this database's
   * outbox under that id are delivered.
   */
  eventId: string;
  /** One of the module's event types; endpoints filter on it. */
  type: string;
  /** When the event happened (the body's `timestamp`). */
  occurredAt: Date;
  /** The body's `data`, as the module's API shows the resource. */
  data: JsonValue;
}

export interface WebhookSource {
  subject: string;
  /** Names the source's durable consumer: lower-case, dashes. */
  name: string;
  /** The event a message stands for; undefined for one that goes to no one. */
  render(message: BusMessage): RenderedWebhookEvent | undefined;
}

/** The exact bytes every attempt sends (and signs). */
export function webhookBody(event: RenderedWebhookEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.occurredAt.toISOString(), data: event.data });
}
