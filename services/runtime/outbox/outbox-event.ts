// The outbox row: an event committed with the domain change that caused it, waiting for the relay to publish it.
import { EntitySchema, types, type Opt } from "@mikro-orm/core";

export interface OutboxEventRow {
  /** The event id; published as Nats-Msg-Id so a repeated publish is dropped by the bus. */
  id: string;
  subject: string;
  /** The protobuf-encoded event message; for a bundle, its events' messages, each length-delimited. */
  payload: Uint8Array;
  /**
   * A bundle's event ids in order, null for a row of one event. The row's id is its first event's;
   * when a publish fails partway, the relay leaves only the events still to publish here.
   */
  eventIds: Opt<string[] | null>;
  headers: Record<string, string>;
  createdAt: Date;
  publishedAt: Date | null;
  attempts: Opt<number>;
  lastError: string | null;
}

// The table also has a `seq` identity column the relay orders by (created_at ties within a transaction).
// It is left unmapped so inserts never name it and the database always assigns it.
export const OutboxEvent = new EntitySchema<OutboxEventRow>({
  name: "OutboxEvent",
  tableName: "outbox_event",
  properties: {
    id: { type: "uuid", primary: true },
    subject: { type: "text" },
    payload: { type: types.uint8array, columnType: "bytea" },
    headers: { type: "json", columnType: "jsonb" },
    eventIds: { type: types.array, columnType: "uuid[]", nullable: true, default: null },
    createdAt: { type: "datetime", columnType: "timestamptz" },
    publishedAt: { type: "datetime", columnType: "timestamptz", nullable: true, default: null },
    attempts: { type: "integer", default: 0 },
    lastError: { type: "text", nullable: true, default: null },
  },
});
