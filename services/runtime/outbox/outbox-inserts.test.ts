// outboxInserts: the outbox rows as statements another statement can carry, split like recordEvents.
import { StringValueSchema } from "@bufbuild/protobuf/wkt";
import { create, toBinary } from "@bufbuild/protobuf";
import test from "ava";
import { outboxInserts } from "./record-events.js";

const event = (i: number) => ({
  subject: "testing.v1.thing.done",
  schema: StringValueSchema,
  message: create(StringValueSchema, { value: `n${i}` }),
});

test("one statement per 5,000 events, ids in the order given, each with as many bindings as placeholders", (t) => {
  const events = Array.from({ length: 5_001 }, (_, i) => event(i));
  const inserts = outboxInserts(events);
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

test("given ids are kept, a bad one is refused, and no events make no statement", (t) => {
  const id = "0b7e9c1e-3f0c-4a53-9d6a-2b8f2f0f4c11";
  const [insert] = outboxInserts([{ ...event(1), id }]);
  t.deepEqual(insert!.ids, [id]);
  t.is(insert!.bindings[1], `{${id}}`);
  t.throws(() => outboxInserts([{ ...event(1), id: "nope" }]), { message: /must be a UUID/ });
  t.deepEqual(outboxInserts([]), []);
  t.deepEqual(
    outboxInserts([{ subject: "s", schema: StringValueSchema, payload: toBinary(StringValueSchema, create(StringValueSchema)) }]).length,
    1,
  );
});
