// outboxRows builds every outbox row (subject from the contract, event id in the message);
// outboxInserts splits many rows into statements another statement can carry, a run of events
// of one subject and headers as one bundle row.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { widgetEvents } from "../../../test/support/test-events.js";
import { joinBundle, splitBundle } from "./bundle.js";
import { maxBundleEvents, outboxInserts, outboxRows } from "./outbox-rows.js";

const events = widgetEvents("insertstest");
const event = (i: number) => ({ schema: events.created, message: { value: `n${i}` } });

test("one statement per 5,000 rows, ids in the order given, each with as many bindings as placeholders", (t) => {
  // Headers of their own: no two events share a row.
  const inserts = outboxInserts(outboxRows(Array.from({ length: 5_001 }, (_, i) => ({ ...event(i), headers: { n: String(i) } }))));
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

/** The array literal of a bundle column (quoted elements, "" for a row of one event) as arrays. */
const bundleIds = (literal: unknown) =>
  String(literal)
    .slice(1, -1)
    .match(/"[^"]*"/g)!
    .map((e) => (e === '""' ? null : e.slice(2, -2).split(",")));

test("consecutive events of one subject and headers share a row, in order; another type or context starts a new one", (t) => {
  const input = [
    event(0),
    event(1),
    event(2),
    { schema: events.updated, message: { value: "u" } },
    event(3),
    { ...event(4), headers: { "x-tenant": "t1" } },
    event(5),
  ];
  const rows = outboxRows(input);
  const [insert] = outboxInserts(rows);
  t.deepEqual(
    insert!.ids,
    rows.map((r) => r.id),
    "every event id, in order",
  );
  t.is(insert!.sql.match(/\?/g)?.length, insert!.bindings.length);
  const bundles = bundleIds(insert!.bindings[5]);
  t.deepEqual(bundles, [[rows[0]!.id, rows[1]!.id, rows[2]!.id], null, null, null, null]);
  t.is(String(insert!.bindings[1]).split(",").length, 5, "five rows");
  t.true(String(insert!.bindings[1]).startsWith(`{${rows[0]!.id},${rows[3]!.id}`), "a bundle row takes its first event's id");
});

test("a bundle holds at most maxBundleEvents; its payload splits back into each event's message", (t) => {
  const rows = outboxRows(Array.from({ length: maxBundleEvents + 2 }, (_, i) => event(i)));
  const [insert] = outboxInserts(rows);
  const bundles = bundleIds(insert!.bindings[5]);
  t.deepEqual(
    bundles.map((b) => b?.length ?? 1),
    [maxBundleEvents, 2],
  );
  const payload = joinBundle(rows.slice(0, 3).map((r) => r.payload));
  t.deepEqual(
    splitBundle(payload, 3).map((m) => (fromBinary(events.created, m) as unknown as { value: string }).value),
    ["n0", "n1", "n2"],
  );
});

test("bundle payloads: lengths of several varint bytes and empty messages round-trip; a damaged payload is refused", (t) => {
  const messages = [new Uint8Array(0), new Uint8Array(300).fill(7), new Uint8Array(20_000).fill(9), Uint8Array.of(1)];
  const payload = joinBundle(messages);
  t.is(payload.byteLength, 1 + 0 + 2 + 300 + 3 + 20_000 + 1 + 1);
  t.deepEqual(
    splitBundle(payload, 4).map((m) => [m.byteLength, m[0]]),
    [
      [0, undefined],
      [300, 7],
      [20_000, 9],
      [1, 1],
    ],
  );
  t.throws(() => splitBundle(payload, 3), { message: /4 messages for 3 event ids/ });
  t.throws(() => splitBundle(payload.subarray(0, payload.byteLength - 1), 4), { message: /runs past the payload/ });
  t.throws(() => splitBundle(Uint8Array.of(0x80), 1), { message: /runs past the payload/ });
});
