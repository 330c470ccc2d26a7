// Adds an event to the caller's unit of work, so it commits or rolls back together with the domain change.
import { randomUUID } from "node:crypto";
import { toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/core";
import { context, propagation } from "@opentelemetry/api";
import { OutboxEvent } from "./outbox-event.js";

export interface RecordEventInput<Desc extends DescMessage> {
  /** `<service>.v1.<entity>.<past-tense verb>` */
  subject: string;
  schema: Desc;
  message: MessageShape<Desc>;
  /** The event id (a UUID); generated when absent. Put the same id inside the message if it has one. */
  id?: string;
  headers?: Record<string, string>;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The headers every event carries before the trace context is added. */
export function baseHeaders(schema: DescMessage, extra?: Record<string, string>): Record<string, string> {
  return {
    "content-type": "application/protobuf",
    // Lets a consumer (or a human with `nats sub`) decode the payload without knowing the subject map.
    "proto-message": schema.typeName,
    ...extra,
  };
}

/**
 * Persists the event on `em` without flushing: the caller's transaction (or next flush) writes it with
 * the domain rows. Returns the event id. Call the relay's notify() after the commit for low latency.
 */
export function recordEvent<Desc extends DescMessage>(em: EntityManager, input: RecordEventInput<Desc>): string {
  const id = input.id ?? randomUUID();
  if (!UUID.test(id)) throw new Error(`event id must be a UUID, got "${id}"`);
  const headers = baseHeaders(input.schema, input.headers);
  // The active trace rides along into the NATS headers, so consumers continue the request's trace.
  propagation.inject(context.active(), headers);
  em.persist(
    em.create(OutboxEvent, {
      id,
      subject: input.subject,
      payload: toBinary(input.schema, input.message),
      headers,
      createdAt: new Date(),
    }),
  );
  return id;
}
