// Records a tracking event in the outbox, inside the caller's transaction. Every event message
// in events.proto is { event_id, occurred_at, <payload> }; this fills the first two.
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/core";
import { randomUUID } from "node:crypto";
import { recordEvent } from "../../runtime/outbox/index.js";

export function recordTrackingEvent<S extends DescMessage>(
  em: EntityManager,
  subject: string,
  schema: S,
  payload: Omit<MessageInitShape<S>, "eventId" | "occurredAt" | "$typeName">,
): string {
  const eventId = randomUUID();
  const message = create(schema, { ...payload, eventId, occurredAt: timestampNow() } as unknown as MessageInitShape<S>);
  return recordEvent(em, { id: eventId, subject, schema, message });
}
