// The events of one observation chunk, written to the outbox with one multi-row insert instead of
// one unit-of-work entity each (the ORM's per-entity bookkeeping was the larger cost of a bulk
// chunk). Rows match what recordEvent writes: same entity, same headers, trace context included.
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { context, propagation } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import { OutboxEvent, type OutboxEventRow } from "../../runtime/outbox/index.js";

// publishedAt, attempts and lastError take their column defaults.
type NewRow = Pick<OutboxEventRow, "id" | "subject" | "payload" | "headers" | "createdAt"> & Partial<OutboxEventRow>;

export class EventBatch {
  private readonly rows: NewRow[] = [];
  private readonly traceHeaders: Record<string, string> = {};

  constructor(private readonly now = new Date()) {
    // Every event of the chunk belongs to the same request, so its trace context is read once.
    propagation.inject(context.active(), this.traceHeaders);
  }

  get size(): number {
    return this.rows.length;
  }

  /** Adds `{ eventId, occurredAt, ...payload }` on `subject`; answers the event id. */
  add<S extends DescMessage>(subject: string, schema: S, payload: Omit<MessageInitShape<S>, "eventId" | "occurredAt" | "$typeName">): string {
    const id = randomUUID();
    const message = create(schema, { ...payload, eventId: id, occurredAt: timestampFromDate(this.now) } as unknown as MessageInitShape<S>);
    this.rows.push({
      id,
      subject,
      payload: toBinary(schema, message),
      headers: { "content-type": "application/protobuf", "proto-message": schema.typeName, ...this.traceHeaders },
      createdAt: this.now,
    });
    return id;
  }

  /** Inserts the rows in the caller's transaction; their order is the order they were added. */
  async write(em: EntityManager): Promise<void> {
    if (this.rows.length) await em.insertMany<OutboxEventRow>(OutboxEvent, this.rows);
  }
}
