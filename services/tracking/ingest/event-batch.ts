// The events of one observation chunk, as the outbox's rows (outboxInserts): one multi-row
// insert with exactly the rows recordEvent writes (headers, trace context). A chunk may carry
// observations of several requests (concurrent single records share one), so each event keeps
// the trace context of the request it came from.
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Context } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import { ObservationRecordedSchema } from "../../../gen/tracking/v1/events_pb.js";
import { outboxInserts, type BatchEventInput, type OutboxInsert } from "../../runtime/outbox/index.js";
import { subjects } from "../events/subjects.js";
import type { ObservationRow } from "../store/observation-entity.js";
import { encodeObservationRecorded } from "./event-encoding.js";

export class EventBatch {
  private readonly events: BatchEventInput[] = [];

  constructor(private readonly now = new Date()) {}

  get size(): number {
    return this.events.length;
  }

  /** tracking.v1.observation.recorded for a stored row (the one event every observation has). */
  addObservationRecorded(row: ObservationRow, context: Context | undefined): string {
    const id = randomUUID();
    this.events.push({
      id,
      subject: subjects.observationRecorded,
      schema: ObservationRecordedSchema,
      payload: encodeObservationRecorded(id, this.now, row),
      ...(context ? { context } : {}),
    });
    return id;
  }

  /** Adds `{ eventId, occurredAt, ...payload }` on `subject`; answers the event id. */
  add<S extends DescMessage>(
    subject: string,
    schema: S,
    payload: Omit<MessageInitShape<S>, "eventId" | "occurredAt" | "$typeName">,
    context: Context | undefined,
  ): string {
    const id = randomUUID();
    const message = create(schema, { ...payload, eventId: id, occurredAt: timestampFromDate(this.now) } as unknown as MessageInitShape<S>);
    this.events.push({ id, subject, schema, payload: toBinary(schema, message), ...(context ? { context } : {}) });
    return id;
  }

  /** The rows, as statements the chunk runs inside its own last one (see outboxInserts), in order. */
  inserts(): OutboxInsert[] {
    return outboxInserts(this.events);
  }
}
