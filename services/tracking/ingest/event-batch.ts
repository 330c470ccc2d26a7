// The events of one observation chunk, written as the outbox's multi-row inserts (the unit of
// work's outboxInserts builds the rows, as for every other event). A chunk may carry
// observations of several requests (concurrent single records share one), so each event keeps
// the trace context of the request it came from.
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type { Context } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import { ObservationRecordedSchema } from "../../../gen/tracking/v1/events_pb.js";
import type { OutboxEventInput, OutboxInsert, Transaction } from "../../runtime/outbox/index.js";
import type { ObservationRow } from "../store/observation-entity.js";
import { encodeObservationRecorded } from "./event-encoding.js";

export class EventBatch {
  private readonly events: OutboxEventInput[] = [];

  constructor(private readonly now = new Date()) {}

  get size(): number {
    return this.events.length;
  }

  /** tracking.v1.observation.recorded for a stored row (the one event every observation has). */
  addObservationRecorded(row: ObservationRow, context: Context | undefined): string {
    const id = randomUUID();
    this.events.push({
      id,
      schema: ObservationRecordedSchema,
      payload: encodeObservationRecorded(id, this.now, row),
      ...(context ? { context } : {}),
    });
    return id;
  }

  /** Adds the event `schema` with `payload` (its event id and time are filled in); answers the event id. */
  add<S extends DescMessage>(schema: S, payload: MessageInitShape<S>, context: Context | undefined): string {
    const id = randomUUID();
    this.events.push({ id, schema, message: payload, ...(context ? { context } : {}) });
    return id;
  }

  /** The rows, as statements the chunk runs inside its own last one, in order. */
  inserts(tx: Transaction): OutboxInsert[] {
    return tx.outboxInserts(this.events, this.now);
  }
}
