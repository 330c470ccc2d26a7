// The one place an outbox row is built: event id, subject (from the message's contract option),
// protobuf payload, headers with the trace context. The unit of work persists rows one by one;
// the ingest fast path writes many with outboxInserts, inside a statement of its own, a run of
// events of one subject and headers as a single row (a bundle).
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { context as otelContext, propagation, type Context } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import { subjectOf } from "../bus/event-subject.js";
import { joinBundle } from "./bundle.js";
import { arrayLiteral, quoteElement } from "./sql.js";

/** One event to record. */
export interface OutboxEventInput<Desc extends DescMessage = DescMessage> {
  schema: Desc;
  /**
   * The message. When the message has `event_id` and `occurred_at` fields (every events.proto
   * message does), an unset event_id is filled with the event id and an unset occurred_at with
   * the time of recording, so callers give only the payload.
   */
  message?: MessageInitShape<Desc>;
  /** Or the message already encoded, its event id inside; `id` must then be that id. */
  payload?: Uint8Array;
  /** The event id (a UUID), published as Nats-Msg-Id; generated when absent. */
  id?: string;
  headers?: Record<string, string>;
  /**
   * The trace context the event carries; the active one when absent. Lets events of several
   * requests written together each keep their own request's trace.
   */
  context?: Context;
}

export interface OutboxRow {
  id: string;
  subject: string;
  payload: Uint8Array;
  headers: Record<string, string>;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The rows of `events`, in order. `now` is the occurred_at filled in (default: the current time).
 * Rows of the same message type and trace context share one headers object.
 */
export function outboxRows(events: readonly OutboxEventInput[], now: Date = new Date()): OutboxRow[] {
  const occurredAt = timestampFromDate(now);
  const active = otelContext.active();
  const shared = new Map<Context, Map<string, Record<string, string>>>();
  return events.map((event) => {
    const id = event.id ?? randomUUID();
    if (!UUID.test(id)) throw new Error(`event id must be a UUID, got "${id}"`);
    const ctx = event.context ?? active;
    let headers: Record<string, string> | undefined;
    if (event.headers) headers = headersFor(event.schema, event.headers, ctx);
    else {
      let byType = shared.get(ctx);
      if (!byType) shared.set(ctx, (byType = new Map()));
      headers = byType.get(event.schema.typeName);
      if (!headers) byType.set(event.schema.typeName, (headers = headersFor(event.schema, undefined, ctx)));
    }
    return { id, subject: subjectOf(event.schema), payload: payloadOf(event, id, occurredAt), headers };
  });
}

function payloadOf(event: OutboxEventInput, id: string, occurredAt: ReturnType<typeof timestampFromDate>): Uint8Array {
  if (event.payload) {
    if (event.id === undefined) throw new Error("an event given as encoded bytes needs its id");
    return event.payload;
  }
  if (!event.message) throw new Error(`event ${event.schema.typeName} has neither a message nor a payload`);
  const envelope = envelopeOf(event.schema);
  const init = { ...event.message } as Record<string, unknown>;
  if (envelope.eventId) {
    if (init.eventId === undefined || init.eventId === "") init.eventId = id;
    else if (init.eventId !== id)
      throw new Error(`event ${event.schema.typeName}: event_id ${String(init.eventId)} is not the event id ${id}`);
  }
  if (envelope.occurredAt && init.occurredAt === undefined) init.occurredAt = occurredAt;
  return toBinary(event.schema, create(event.schema, init as MessageInitShape<DescMessage>));
}

interface Envelope {
  eventId: boolean;
  occurredAt: boolean;
}

const envelopes = new WeakMap<DescMessage, Envelope>();

function envelopeOf(schema: DescMessage): Envelope {
  let envelope = envelopes.get(schema);
  if (!envelope) {
    const eventId = schema.field.eventId;
    const occurredAt = schema.field.occurredAt;
    envelope = {
      eventId: eventId?.fieldKind === "scalar" && eventId.name === "event_id",
      occurredAt: occurredAt?.fieldKind === "message" && occurredAt.message.typeName === "google.protobuf.Timestamp",
    };
    envelopes.set(schema, envelope);
  }
  return envelope;
}

/** The headers every event carries, then the trace context. */
function headersFor(schema: DescMessage, extra: Record<string, string> | undefined, ctx: Context): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/protobuf",
    // Lets a consumer (or a human with `nats sub`) decode the payload without knowing the subject map.
    "proto-message": schema.typeName,
    ...extra,
  };
  // The trace rides along into the NATS headers, so consumers continue the request's trace.
  propagation.inject(ctx, headers);
  return headers;
}

/** Above this many rows the insert is split, so one statement's parameters stay small. */
const rowsPerStatement = 5_000;

/**
 * At most this many events share a row. The relay cuts its batches by events, not rows, so a
 * bundle never makes a batch much larger than its size.
 */
export const maxBundleEvents = 1_000;

/** A multi-row insert of outbox rows, to run alone or as one part of a larger statement. */
export interface OutboxInsert {
  /** An `insert ... select` with `?` placeholders for `bindings`; no RETURNING, no trailing semicolon. */
  readonly sql: string;
  readonly bindings: readonly unknown[];
  /** The event ids, in the order the relay will publish them. */
  readonly ids: readonly string[];
}

/** One row to write: an event, or a run of consecutive events of one subject and headers. */
interface RowGroup {
  first: OutboxRow;
  /** Every event of a bundle; undefined for a row of one event. */
  events?: OutboxRow[];
}

/**
 * Consecutive events with the same subject and the same headers object (outboxRows shares one
 * per message type and trace context) become one bundle row, so the order of events is kept.
 */
function groupRows(rows: readonly OutboxRow[]): RowGroup[] {
  const groups: RowGroup[] = [];
  let open: RowGroup | undefined;
  for (const row of rows) {
    if (open && open.first.subject === row.subject && open.first.headers === row.headers && (open.events?.length ?? 1) < maxBundleEvents) {
      (open.events ??= [open.first]).push(row);
      continue;
    }
    open = { first: row };
    groups.push(open);
  }
  return groups;
}

/**
 * Rows as statements of at most `rowsPerStatement` rows each, for code that saves a round trip by
 * running the insert inside a statement of its own (a data-modifying WITH part). The caller runs
 * them in its transaction, in order, after anything its unit of work still holds is flushed.
 * Runs of events that share a subject and headers are written as bundles (see groupRows).
 */
export function outboxInserts(rows: readonly OutboxRow[], createdAt: Date = new Date()): OutboxInsert[] {
  const groups = groupRows(rows);
  // Array elements, already quoted for the literal: subjects and headers repeat, so each distinct
  // one is quoted (and, for headers, serialised) once.
  const quotedSubjects = new Map<string, string>();
  const quotedHeaders = new Map<Record<string, string>, string>();
  const subjects: string[] = [];
  const headers: string[] = [];
  for (const { first } of groups) {
    let subject = quotedSubjects.get(first.subject);
    if (subject === undefined) quotedSubjects.set(first.subject, (subject = quoteElement(first.subject)));
    subjects.push(subject);
    let quoted = quotedHeaders.get(first.headers);
    if (quoted === undefined) quotedHeaders.set(first.headers, (quoted = quoteElement(JSON.stringify(first.headers))));
    headers.push(quoted);
  }
  const at = createdAt.toISOString();
  const inserts: OutboxInsert[] = [];
  for (let start = 0; start < groups.length; start += rowsPerStatement) {
    const part = groups.slice(start, start + rowsPerStatement);
    inserts.push({
      sql: `insert into "outbox_event" ("id", "subject", "payload", "headers", "event_ids", "created_at")
       select v.id, v.subject, v.payload, v.headers, nullif(v.event_ids, '')::uuid[], ?::timestamptz
         from unnest(?::uuid[], ?::text[], ?::bytea[], ?::jsonb[], ?::text[])
              with ordinality as v(id, subject, payload, headers, event_ids, n)
        order by v.n`,
      bindings: [
        at,
        arrayLiteral.uuids(part.map((g) => g.first.id)),
        `{${subjects.slice(start, start + rowsPerStatement).join(",")}}`,
        arrayLiteral.bytes(part.map((g) => (g.events ? joinBundle(g.events.map((e) => e.payload)) : g.first.payload))),
        `{${headers.slice(start, start + rowsPerStatement).join(",")}}`,
        `{${part.map((g) => (g.events ? `"${arrayLiteral.uuids(g.events.map((e) => e.id))}"` : '""')).join(",")}}`,
      ],
      ids: part.flatMap((g) => (g.events ? g.events.map((e) => e.id) : [g.first.id])),
    });
  }
  return inserts;
}
