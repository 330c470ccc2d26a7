// Many events in one multi-row insert, for code that records them by the hundred (bulk ingest):
// the rows are exactly what recordEvent writes — same columns, same headers, trace context
// included — without one unit-of-work entity per event.
import { randomUUID } from "node:crypto";
import { toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/core";
import { context as otelContext, propagation, type Context } from "@opentelemetry/api";
import { baseHeaders, UUID } from "./record-event.js";
import { arrayLiteral, queryOn, quoteElement } from "./sql.js";

interface BatchEventBase {
  /** `<service>.v1.<entity>.<past-tense verb>` */
  subject: string;
  schema: DescMessage;
  /** The event id (a UUID); generated when absent. Put the same id inside the message if it has one. */
  id?: string;
  headers?: Record<string, string>;
  /**
   * The trace context the event carries (traceparent, tracestate); the active one when absent.
   * Lets events of several requests written together each keep their own request's trace.
   */
  context?: Context;
}

/** One event for recordEvents: the message, or its bytes already encoded with toBinary(schema, message). */
export type BatchEventInput = BatchEventBase &
  ({ message: MessageShape<DescMessage>; payload?: never } | { payload: Uint8Array; message?: never });

/** Above this many rows the insert is split, so one statement's parameters stay small. */
const rowsPerStatement = 5_000;

/** A multi-row insert of outbox rows, to run alone or as one part of a larger statement. */
export interface OutboxInsert {
  /** An `insert ... select` with `?` placeholders for `bindings`; no RETURNING, no trailing semicolon. */
  readonly sql: string;
  readonly bindings: readonly unknown[];
  /** The event ids, in the order the relay will publish them. */
  readonly ids: readonly string[];
}

/**
 * The rows recordEvents writes, as statements of at most `rowsPerStatement` rows each, for code
 * that saves a round trip by running the insert inside a statement of its own (a data-modifying
 * WITH part). The caller runs them in its transaction, in order, after anything its unit of work
 * still holds is flushed; then it calls the relay's notify() after the commit.
 */
export function outboxInserts(events: readonly BatchEventInput[]): OutboxInsert[] {
  const ids: string[] = [];
  // Array elements, already quoted for the literal: subjects and headers repeat, so each distinct
  // one is quoted (and, for headers, built and serialised) once.
  const subjects: string[] = [];
  const payloads: Uint8Array[] = [];
  const headers: string[] = [];
  const quotedSubjects = new Map<string, string>();
  // Most events of a batch share their type and trace context.
  const headerCache = new Map<Context, Map<string, string>>();
  const active = otelContext.active();
  for (const event of events) {
    const id = event.id ?? randomUUID();
    if (!UUID.test(id)) throw new Error(`event id must be a UUID, got "${id}"`);
    ids.push(id);
    let subject = quotedSubjects.get(event.subject);
    if (subject === undefined) quotedSubjects.set(event.subject, (subject = quoteElement(event.subject)));
    subjects.push(subject);
    payloads.push(event.payload ?? toBinary(event.schema, event.message!));
    const ctx = event.context ?? active;
    if (event.headers) {
      headers.push(quoteElement(JSON.stringify(headersFor(event.schema, event.headers, ctx))));
      continue;
    }
    let byType = headerCache.get(ctx);
    if (!byType) headerCache.set(ctx, (byType = new Map()));
    let quoted = byType.get(event.schema.typeName);
    if (quoted === undefined)
      byType.set(event.schema.typeName, (quoted = quoteElement(JSON.stringify(headersFor(event.schema, undefined, ctx)))));
    headers.push(quoted);
  }

  const createdAt = new Date().toISOString();
  const inserts: OutboxInsert[] = [];
  for (let start = 0; start < ids.length; start += rowsPerStatement) {
    const end = start + rowsPerStatement;
    inserts.push({
      sql: `insert into "outbox_event" ("id", "subject", "payload", "headers", "created_at")
       select v.id, v.subject, v.payload, v.headers, ?::timestamptz
         from unnest(?::uuid[], ?::text[], ?::bytea[], ?::jsonb[]) with ordinality as v(id, subject, payload, headers, n)
        order by v.n`,
      bindings: [
        createdAt,
        arrayLiteral.uuids(ids.slice(start, end)),
        `{${subjects.slice(start, end).join(",")}}`,
        arrayLiteral.bytes(payloads.slice(start, end)),
        `{${headers.slice(start, end).join(",")}}`,
      ],
      ids: ids.slice(start, end),
    });
  }
  return inserts;
}

/**
 * Inserts the events now, in `em`'s transaction (or as their own statement outside one), in the
 * order given; the relay publishes them in that order after the commit. Anything pending in
 * `em`'s unit of work (events from recordEvent included) is flushed first, so the order in which
 * events were recorded is the order in which they are published. Answers the event ids.
 * Call the relay's notify() after the commit, as with recordEvent.
 */
export async function recordEvents(em: EntityManager, events: readonly BatchEventInput[]): Promise<string[]> {
  const inserts = outboxInserts(events);
  if (!inserts.length) return [];
  // Like recordEvent's rows, which only reach the table at the next flush: keep recording order.
  if (hasPendingChanges(em)) await em.flush();
  const q = queryOn(em);
  for (const insert of inserts) await q(insert.sql, insert.bindings);
  return inserts.flatMap((insert) => [...insert.ids]);
}

function headersFor(schema: DescMessage, extra: Record<string, string> | undefined, ctx: Context): Record<string, string> {
  const headers = baseHeaders(schema, extra);
  propagation.inject(ctx, headers);
  return headers;
}

function hasPendingChanges(em: EntityManager): boolean {
  const uow = em.getUnitOfWork();
  return uow.getPersistStack().size > 0 || uow.getRemoveStack().size > 0 || uow.getIdentityMap().values().length > 0;
}
