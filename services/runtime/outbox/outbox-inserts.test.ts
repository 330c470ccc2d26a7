// outboxRows builds every outbox row (subject from the contract, event id in the message);
// outboxInserts splits many rows into statements another statement can carry.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { widgetEvents } from "../../../test/support/test-events.js";
import { outboxInserts, outboxRows } from "./outbox-rows.js";

const events = widgetEvents("insertstest");
const event = (i: number) => ({ schema: events.created, message: { value: `n${i}` } });

test("one statement per 5,000 events, ids in the order given, each with as many bindings as placeholders", (t) => {
  const inserts = outboxInserts(outboxRows(Array.from({ length: 5_001 }, (_, i) => event(i))));
  t.is(inserts.length, 2);
  t.deepEqual(
    inserts.map((i) => i.ids.length),
    [5_000, 1],
  );
  for (const insert of inserts) {
    t.is(insert.sql.match(/\?/g)?.length, insert.bindings.length);
    t.notRegex(insert.sql, /;\s*$/);
  }
  t.is(new Set(inserts.flatMap((i) => i.ids)).size, 5_001);
});

test("rows: the subject comes from the message, the id goes into it, given ids are kept and a bad one is refused", (t) => {
  const id = "0b7e9c1e-3f0c-4a53-9d6a-2b8f2f0f4c11";
  const now = new Date("2026-03-01T10:00:00.250Z");
  const [row] = outboxRows([{ ...event(1), id }], now);
  t.is(row!.subject, "insertstest.v1.widget.created");
  t.like(fromBinary(events.created, row!.payload), { eventId: id, occurredAt: { seconds: 1772359200n, nanos: 250_000_000 } });
  const [insert] = outboxInserts([row!]);
  t.deepEqual(insert!.ids, [id]);
  t.is(insert!.bindings[1], `{${id}}`);
  t.throws(() => outboxRows([{ ...event(1), id: "nope" }]), { message: /must be a UUID/ });
  t.throws(() => outboxRows([{ schema: events.plain, message: {} }]), { message: /not an event message/ });
  t.throws(() => outboxRows([{ schema: events.created, message: { eventId: id } as never, id: crypto.randomUUID() }]), {
    message: /is not the event id/,
  });
  t.deepEqual(outboxInserts([]), []);
});
