// The outbox end to end: events commit (or roll back) with the change, reach the bus in order, survive a
// crash between commit and publish, outlast a failing bus, and are shared between relays without repeats;
// the multi-row inserts of the ingest fast path write the same rows as Transaction.record.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import { ROOT_CONTEXT, context, propagation, trace, TraceFlags, type Context, type ContextManager } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import test, { type ExecutionContext } from "ava";
import { connect } from "nats";
import { openBus, type BusMessage, type EventBus } from "../bus/index.js";
import { openDatabase, type Database, type DatabaseModule } from "../database/index.js";
import { realInfra, realServers } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { widgetEvents, type WidgetEvents } from "../../../test/support/test-events.js";
import { until } from "../../../test/support/until.js";
import { createUnitOfWork, OUTBOX_ROW_HEADER, OutboxEvent, outboxModule, startOutboxRelay, transactionOn } from "./index.js";
import { splitBundle } from "./bundle.js";
import { queryOn } from "./sql.js";

interface Widget {
  id: string;
  name: string;
}

const WidgetEntity = new EntitySchema<Widget>({
  name: "Widget",
  tableName: "outboxtest_widget",
  properties: { id: { type: "uuid", primary: true }, name: { type: "text" } },
});

class CreateWidget extends Migration {
  override up(): void {
    this.addSql('create table "outboxtest_widget" ("id" uuid primary key, "name" text not null);');
  }
}

const widgets: DatabaseModule = {
  name: "widgets",
  entities: [WidgetEntity],
  migrations: [{ name: "widgets-0001-widget", class: CreateWidget }],
};

/** Enough of a context manager for synchronous context.with(), so the test needs no SDK. */
class SyncContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;
  active(): Context {
    return this.current;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.current;
    this.current = ctx;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = previous;
    }
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}
context.setGlobalContextManager(new SyncContextManager());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const logger = testLogger("outbox.test");
const infra = realInfra();
const targets = realServers(test, "postgres", ["postgres"]) ? ["embedded", "postgres"] : ["embedded"];

interface Fixture {
  /** Opens the database at this test's place; call again to simulate a process restart. */
  open(): Promise<Database>;
  bus: EventBus;
  stream: string;
  /** Event messages whose subjects lie in this fixture's stream only. */
  events: WidgetEvents;
  /** Everything the stream holds from its first message on, in stream order. */
  seen: BusMessage[];
}

async function fixture(t: ExecutionContext, target: string): Promise<Fixture> {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-outbox-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (target === "postgres") {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    t.teardown(() => created.drop());
    url = created.url;
  }
  // Teardowns run last-in first-out: databases close before the temporary places go away.
  const open = async () => {
    const db = await openDatabase({ url, dataDir, modules: [outboxModule, widgets], logger });
    t.teardown(() => db.close());
    return db;
  };

  const suffix = randomBytes(4).toString("hex");
  const stream = `OUTBOXTEST_${suffix.toUpperCase()}`;
  const service = `outboxtest${suffix}`;
  const bus = await openBus({ url: infra.natsUrl, logger });
  t.teardown(async () => {
    await bus.close();
    if (infra.natsUrl) {
      const nc = await connect({ servers: infra.natsUrl });
      await (await nc.jetstreamManager()).streams.delete(stream).catch(() => undefined);
      await nc.close();
    }
  });
  await bus.ensureStreams([{ name: stream, subjects: [`${service}.v1.>`] }]);
  const seen: BusMessage[] = [];
  const sub = await bus.subscribe({ stream, startSeq: 1 }, (m) => seen.push(m));
  t.teardown(() => sub.stop());
  return { open, bus, stream, events: widgetEvents(service), seen };
}

/**
 * Counts the publishes the bus acknowledged. A publish that fails (on a loaded machine a JetStream
 * ack can time out after the message was stored) is retried by design and kept once by the
 * stream's de-duplication on the event id; a relay that sent an acknowledged event again would
 * still count it twice.
 */
async function countAcked<T>(counts: Map<string, number>, id: string, publish: Promise<T>): Promise<T> {
  const ack = await publish;
  counts.set(id, (counts.get(id) ?? 0) + 1);
  return ack;
}

/** A bus that refuses the event whose value is `value` once ("bus hiccup") and counts acked publishes. */
function refusingOnce(bus: EventBus, value: string, counts: Map<string, number>): EventBus {
  let refuse = true;
  return {
    ...bus,
    kind: bus.kind,
    async publish(s, data, opts) {
      if (refuse && widgetValue(data) === value) {
        refuse = false;
        throw new Error("bus hiccup");
      }
      return countAcked(counts, opts.id, bus.publish(s, data, opts));
    },
  };
}

/**
 * For waits on a relay's publishes over NATS: in a full CI run on two cores, with a dozen of these
 * tests and another suite file at once, a JetStream publish or an ordered consumer's delivery has
 * taken most of the default 30 s (a condition that holds still ends the wait at once).
 */
const loaded = { timeoutMs: 90_000 };

/** A unit of work whose relay is started (and told) by each test itself. */
const unitOfWork = (db: Database) => createUnitOfWork({ db, outbox: { notify() {} } });

async function addWidget(db: Database, schema: DescMessage, name: string): Promise<string> {
  return unitOfWork(db).run(async (tx) => {
    const widget = tx.em.create(WidgetEntity, { id: crypto.randomUUID(), name });
    return tx.record(schema, { value: widget.name });
  });
}

// Every widget event has the same fields, so any of them decodes the others.
const decoder = widgetEvents("decoder").created;
const widgetValue = (data: Uint8Array) => (fromBinary(decoder, data) as unknown as { value: string }).value;
const text = (m: BusMessage) => widgetValue(m.data);

for (const target of targets) {
  const name = (title: string) => `${target}: ${title}`;

  test(name("an event commits with its change, and a rollback leaves neither"), async (t) => {
    const { open, events } = await fixture(t, target);
    const db = await open();
    const spanContext = { traceId: "a".repeat(32), spanId: "b".repeat(16), traceFlags: TraceFlags.SAMPLED };

    const id = await unitOfWork(db).run(async (tx) => {
      tx.em.create(WidgetEntity, { id: crypto.randomUUID(), name: "kept" });
      return context.with(trace.setSpanContext(ROOT_CONTEXT, spanContext), () =>
        tx.record(events.created, { value: "kept" }, { headers: { "x-tenant": "t1" } }),
      );
    });
    const row = await db.em().findOneOrFail(OutboxEvent, { id });
    t.is(row.subject, `${events.created.typeName.split(".")[0]}.v1.widget.created`);
    const stored = fromBinary(events.created, row.payload) as unknown as { value: string; eventId: string; occurredAt?: unknown };
    t.is(stored.value, "kept");
    t.is(stored.eventId, id, "the event id is put in the message");
    t.truthy(stored.occurredAt, "and the time it occurred");
    t.is(row.publishedAt, null);
    t.is(row.attempts, 0);
    t.like(row.headers, {
      traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
      "x-tenant": "t1",
      "content-type": "application/protobuf",
      "proto-message": events.created.typeName,
    });

    await t.throwsAsync(
      unitOfWork(db).run(async (tx) => {
        tx.em.create(WidgetEntity, { id: crypto.randomUUID(), name: "lost" });
        tx.record(events.created, { value: "lost" });
        await tx.em.flush();
        throw new Error("domain rule broken");
      }),
      { message: "domain rule broken" },
    );
    t.is(await db.em().count(OutboxEvent), 1);
    t.deepEqual(
      (await db.em().find(WidgetEntity, {})).map((w) => w.name),
      ["kept"],
    );
    await t.throwsAsync(
      unitOfWork(db).run(async (tx) => tx.record(events.created, { value: "x" }, { id: "not-a-uuid" })),
      { message: /UUID/ },
    );
    await t.throwsAsync(
      unitOfWork(db).run(async (tx) => tx.record(events.plain, { value: "x" })),
      { message: /no \(meshwork.api.v1.event\).subject option/ },
      "a message that is not an event has no subject",
    );
    t.is(await db.em().count(OutboxEvent), 1);
  });

  test(name("the relay publishes in creation order with the event id and headers, and marks rows published"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    const ids = [await addWidget(db, events.created, "w1"), await addWidget(db, events.created, "w2")];
    ids.push(
      ...(await unitOfWork(db).run(async (tx) => [
        tx.record(events.updated, { value: "w1 renamed" }),
        tx.record(events.deleted, { value: "w2 gone" }),
      ])),
    );

    // A long poll interval: only the start-up pass, drain() and notify() can move anything here.
    const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: 60_000 });
    t.teardown(() => relay.stop());
    await relay.drain();
    await until(() => seen.length === 4, "four events");
    t.deepEqual(seen.map(text), ["w1", "w2", "w1 renamed", "w2 gone"]);
    t.deepEqual(
      seen.map((m) => m.id),
      ids,
    );
    t.like(seen[0]!.headers, { "content-type": "application/protobuf", "proto-message": events.created.typeName });
    t.is(await db.em().count(OutboxEvent, { publishedAt: null }), 0);

    const late = await addWidget(db, events.created, "w3");
    relay.notify();
    await until(() => seen.length === 5, "the notified event");
    t.is(seen[4]!.id, late);
    await until(async () => (await db.em().count(OutboxEvent, { publishedAt: null })) === 0, "the row to be marked");
  });

  test(name("an event committed before a crash is published by the next start"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const before = await open();
    const id = await addWidget(before, events.created, "survivor");
    await before.close(); // the process dies before any relay ran

    const after = await open();
    const relay = startOutboxRelay({ db: after, bus, logger, pollIntervalMs: 60_000 });
    t.teardown(() => relay.stop());
    await until(() => seen.length === 1, "the survivor");
    t.is(seen[0]!.id, id);
    t.is(text(seen[0]!), "survivor");
    await until(async () => (await after.em().findOneOrFail(OutboxEvent, { id })).publishedAt !== null, "the row to be marked");
  });

  test(name("a failing bus is retried with backoff; nothing is lost or reordered"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    let failuresLeft = 2;
    const flaky: EventBus = {
      ...bus,
      kind: bus.kind,
      async publish(s, data, opts) {
        if (failuresLeft-- > 0) throw new Error("bus unavailable");
        return bus.publish(s, data, opts);
      },
    };
    const ids = [];
    for (const n of ["a", "b", "c"]) ids.push(await addWidget(db, events.created, n));

    const relay = startOutboxRelay({ db, bus: flaky, logger, pollIntervalMs: 60_000, retryInitialDelayMs: 10, retryMaxDelayMs: 50 });
    t.teardown(() => relay.stop());
    await until(() => seen.length === 3, "all three after the retries", loaded);
    t.deepEqual(seen.map(text), ["a", "b", "c"]);
    // The bus sees an event just before the relay's transaction marks it, so wait for the mark.
    await until(async () => (await db.em().count(OutboxEvent, { publishedAt: null })) === 0, "the rows to be marked");
    const first = await db.em().findOneOrFail(OutboxEvent, { id: ids[0]! });
    t.is(first.attempts, 2);
    t.is(first.lastError, "bus unavailable");
  });

  test(name("drain() reports a bus that refuses an event"), async (t) => {
    const { open, bus, seen } = await fixture(t, target);
    const db = await open();
    await addWidget(db, widgetEvents(`nostream${randomBytes(4).toString("hex")}`).created, "orphan");
    const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: 60_000, retryInitialDelayMs: 60_000 });
    t.teardown(() => relay.stop());
    await t.throwsAsync(relay.drain());
    t.is(seen.length, 0);
    t.is(await db.em().count(OutboxEvent, { publishedAt: null }), 1);
  });

  test(name("relays running side by side publish every event exactly once"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    // Embedded PGlite belongs to one process, so there the relays share it; a real server gets two pools.
    const first = await open();
    const second = target === "postgres" ? await open() : first;
    const counts = new Map<string, number>();
    const counting: EventBus = {
      ...bus,
      kind: bus.kind,
      async publish(s, data, opts) {
        return countAcked(counts, opts.id, bus.publish(s, data, opts));
      },
    };
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) ids.push(await addWidget(first, events.created, `w${n}`));

    const relays = [first, second, first, second].map((db) =>
      startOutboxRelay({ db, bus: counting, logger, batchSize: 3, pollIntervalMs: 60_000 }),
    );
    t.teardown(() => Promise.all(relays.map((r) => r.stop())));
    await Promise.all(relays.map((r) => r.drain()));
    await until(() => seen.length >= 20, "twenty events");
    t.deepEqual([...counts.keys()].sort(), [...ids].sort());
    t.true(
      [...counts.values()].every((c) => c === 1),
      "no event was published twice",
    );
    t.is(seen.length, 20);
  });

  test(name("the fast path's multi-row inserts write what record writes, in order, each with its own trace context"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    const spanA = { traceId: "a".repeat(32), spanId: "b".repeat(16), traceFlags: TraceFlags.SAMPLED };
    const spanC = { traceId: "c".repeat(32), spanId: "d".repeat(16), traceFlags: TraceFlags.SAMPLED };
    const other = trace.setSpanContext(ROOT_CONTEXT, spanC);
    const givenId = crypto.randomUUID();
    const encodedId = crypto.randomUUID();

    const ids = await unitOfWork(db).run((tx) =>
      context.with(trace.setSpanContext(ROOT_CONTEXT, spanA), async () => {
        // Recorded first, still waiting in the entity manager: flushed before the inserts, it stays first.
        const single = tx.record(events.created, { value: "one" });
        const inserts = tx.outboxInserts([
          { schema: events.updated, message: { value: "two" }, id: givenId },
          {
            schema: events.updated,
            id: encodedId,
            payload: toBinary(events.updated, create(events.updated, { value: "three", eventId: encodedId } as never)),
            headers: { "x-tenant": "t1" },
          },
          { schema: events.deleted, message: { value: "four" }, context: other },
        ]);
        await tx.em.flush();
        for (const insert of inserts) await queryOn(tx.em)(insert.sql, insert.bindings);
        return [single, ...inserts.flatMap((i) => i.ids)];
      }),
    );
    t.deepEqual(ids.slice(1, 3), [givenId, encodedId]);
    t.is(ids.length, 4);

    const rows = await db.em().find(OutboxEvent, { id: { $in: ids } });
    const byId = new Map(rows.map((r) => [r.id, r]));
    const traceparent = (span: { traceId: string; spanId: string }) => `00-${span.traceId}-${span.spanId}-01`;
    const base = (schema: DescMessage) => ({ "content-type": "application/protobuf", "proto-message": schema.typeName });
    t.deepEqual(byId.get(ids[0]!)!.headers, { ...base(events.created), traceparent: traceparent(spanA) });
    t.deepEqual(byId.get(ids[1]!)!.headers, { ...base(events.updated), traceparent: traceparent(spanA) }, "the same headers as record");
    t.deepEqual(byId.get(ids[2]!)!.headers, { ...base(events.updated), "x-tenant": "t1", traceparent: traceparent(spanA) });
    t.deepEqual(byId.get(ids[3]!)!.headers, { ...base(events.deleted), traceparent: traceparent(spanC) }, "the context given wins");
    t.deepEqual(
      ids.map((id) => byId.get(id)!.subject.split(".").slice(2).join(".")),
      ["widget.created", "widget.updated", "widget.updated", "widget.deleted"],
    );
    t.deepEqual(
      ids.map((id) => widgetValue(byId.get(id)!.payload)),
      ["one", "two", "three", "four"],
    );
    t.deepEqual(
      ids.map((id) => (fromBinary(decoder, byId.get(id)!.payload) as unknown as { eventId: string }).eventId),
      ids,
      "every message carries its event id",
    );
    for (const row of rows) {
      t.is(row.publishedAt, null);
      t.is(row.attempts, 0);
      t.true(row.createdAt instanceof Date);
    }

    // A rollback takes them away with the change.
    await t.throwsAsync(
      unitOfWork(db).run(async (tx) => {
        for (const insert of tx.outboxInserts([{ schema: events.created, message: { value: "lost" } }])) {
          await queryOn(tx.em)(insert.sql, insert.bindings);
        }
        throw new Error("domain rule broken");
      }),
      { message: "domain rule broken" },
    );
    t.is(await db.em().count(OutboxEvent), 4);
    const direct = transactionOn(db.em());
    t.throws(() => direct.outboxInserts([{ id: "nope", schema: events.created, message: { value: "" } }]), { message: /UUID/ });
    t.throws(() => direct.outboxInserts([{ schema: events.created, payload: new Uint8Array() }]), { message: /needs its id/ });
    t.deepEqual(direct.outboxInserts([]), []);

    const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: 60_000 });
    t.teardown(() => relay.stop());
    await relay.drain();
    await until(() => seen.length === 4, "four events");
    t.deepEqual(seen.map(text), ["one", "two", "three", "four"]);
    t.deepEqual(
      seen.map((m) => m.id),
      ids,
    );
    t.is(seen[3]!.headers.traceparent, traceparent(spanC));
  });

  test(name("a large backlog goes out in order through the publish window, every event once"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    const values = Array.from({ length: 260 }, (_, i) => `e${i}`);
    // Two transactions: order holds across statements and commits.
    for (const part of [values.slice(0, 130), values.slice(130)]) {
      await unitOfWork(db).run(async (tx) => {
        for (const value of part) tx.record(events.created, { value });
      });
    }
    const counts = new Map<string, number>();
    const counting: EventBus = {
      ...bus,
      kind: bus.kind,
      async publish(s, data, opts) {
        return countAcked(counts, opts.id, bus.publish(s, data, opts));
      },
    };
    const relay = startOutboxRelay({ db, bus: counting, logger, batchSize: 100, publishWindow: 16, pollIntervalMs: 60_000 });
    t.teardown(() => relay.stop());
    await relay.drain();
    await until(() => seen.length === values.length, "every event");
    t.deepEqual(seen.map(text), values);
    t.true(
      [...counts.values()].every((c) => c === 1),
      "no event was published twice",
    );
    t.is(await db.em().count(OutboxEvent, { publishedAt: null }), 0);
  });

  test(name("an event refused in the middle of a window is retried; the others are published once"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    const values = Array.from({ length: 20 }, (_, i) => `e${i}`);
    await unitOfWork(db).run(async (tx) => {
      for (const value of values) tx.record(events.created, { value });
    });
    const counts = new Map<string, number>();
    const flaky = refusingOnce(bus, "e5", counts);
    const relay = startOutboxRelay({
      db,
      bus: flaky,
      logger,
      publishWindow: 8,
      pollIntervalMs: 60_000,
      retryInitialDelayMs: 10,
      retryMaxDelayMs: 50,
    });
    t.teardown(() => relay.stop());
    await until(() => seen.length === values.length, "every event after the retry", loaded);
    t.deepEqual([...seen.map(text)].sort(), [...values].sort());
    t.true(
      [...counts.values()].every((c) => c === 1),
      "no event was published twice",
    );
    t.is(counts.size, values.length);
    await until(async () => (await db.em().count(OutboxEvent, { publishedAt: null })) === 0, "the rows to be marked");
    const refused = (await db.em().find(OutboxEvent, {})).find((r) => widgetValue(r.payload) === "e5")!;
    t.is(refused.attempts, 1);
    t.is(refused.lastError, "bus hiccup");
    // Only the window it was in could overtake it: e0 (the probe) and e1..e4 went first.
    t.deepEqual(seen.slice(0, 5).map(text), ["e0", "e1", "e2", "e3", "e4"]);
  });

  test(
    name("bundled events go out one by one in order with their own ids; a refusal inside a bundle resumes after what went out"),
    async (t) => {
      const { open, events } = await fixture(t, target);
      const db = await open();
      // The in-process bus whatever the target: on a loaded machine a JetStream ack that times out
      // fails some other event first, and this test reads the state that one refusal leaves.
      const bus = await openBus({ logger });
      t.teardown(() => bus.close());
      await bus.ensureStreams([{ name: "BUNDLES", subjects: [">"] }]);
      const seen: BusMessage[] = [];
      const sub = await bus.subscribe({ stream: "BUNDLES", startSeq: 1 }, (m) => seen.push(m));
      t.teardown(() => sub.stop());
      const values = Array.from({ length: 250 }, (_, i) => `b${i}`);
      // One recorded event, a bundle of 250 from the fast path, then another single one.
      const ids = await unitOfWork(db).run(async (tx) => {
        const before = tx.record(events.created, { value: "before" });
        await tx.em.flush();
        const inserts = tx.outboxInserts(values.map((value) => ({ schema: events.updated, message: { value } })));
        for (const insert of inserts) await queryOn(tx.em)(insert.sql, insert.bindings);
        const after = tx.record(events.created, { value: "after" });
        return [before, ...inserts.flatMap((i) => i.ids), after];
      });
      const rows = await db.em().find(OutboxEvent, {});
      t.is(rows.length, 3, "three rows hold 252 events");
      const bundle = rows.find((r) => r.eventIds !== null)!;
      t.deepEqual(bundle.eventIds, ids.slice(1, 251));
      t.is(bundle.id, ids[1]);

      const counts = new Map<string, number>();
      const flaky = refusingOnce(bus, "b120", counts);
      // Batches of 100 events: the bundle is taken whole with the row before it, and what is left of
      // it after the refusal is more than a batch. The start-up pass meets the refusal; its retry
      // waits a minute, so the state it left can be read.
      const relay = startOutboxRelay({
        db,
        bus: flaky,
        logger,
        batchSize: 100,
        publishWindow: 16,
        pollIntervalMs: 60_000,
        retryInitialDelayMs: 60_000,
      });
      t.teardown(() => relay.stop());
      const stopped = await until(async () => {
        const row = await db.em().fork().findOneOrFail(OutboxEvent, { id: bundle.id });
        return row.attempts === 1 && row;
      }, "the refusal recorded");
      t.is(stopped.attempts, 1);
      t.is(stopped.lastError, "bus hiccup");
      t.is(stopped.publishedAt, null);
      // Windows of 16 after the probe: b112..b127 shared b120's window, so b121..b127 went out
      // with b0..b119; the row keeps b120 and b128 on.
      const left = [120, ...Array.from({ length: 122 }, (_, i) => 128 + i)];
      t.deepEqual(
        stopped.eventIds,
        left.map((i) => ids[1 + i]),
      );
      t.deepEqual(
        splitBundle(stopped.payload, left.length).map(widgetValue),
        left.map((i) => values[i]),
      );
      await relay.drain();

      await until(() => seen.length === ids.length, "every event");
      // Only the window it was in could overtake the refused event.
      const order = ["before", ...values.slice(0, 120), ...values.slice(121, 128), "b120", ...values.slice(128), "after"];
      t.deepEqual(seen.map(text), order);
      t.deepEqual(
        seen.map((m) => m.id),
        order.map((v) => (v === "before" ? ids[0] : v === "after" ? ids[251] : ids[1 + Number(v.slice(1))])),
      );
      t.true(
        [...counts.values()].every((c) => c === 1),
        "no event was published twice",
      );
      t.is(counts.size, ids.length);
      t.false(OUTBOX_ROW_HEADER in seen[1]!.headers, "a bundle's first event is its row");
      t.true(
        seen.slice(2, 251).every((m) => m.headers[OUTBOX_ROW_HEADER] === bundle.id),
        "the others name the row that carried them",
      );
      t.is(seen[2]!.headers["proto-message"], events.updated.typeName, "with the headers the row carries");
      t.is(await db.em().fork().count(OutboxEvent, { publishedAt: null }), 0);
    },
  );

  test(name("notifies close together share one relay cycle; drain() does not wait"), async (t) => {
    const { open, bus, events, seen } = await fixture(t, target);
    const db = await open();
    // Retries quickly: a publish that times out on a loaded machine is not what this test is about.
    const relay = startOutboxRelay({ db, bus, logger, pollIntervalMs: 60_000, coalesceMs: 5_000, retryMaxDelayMs: 200 });
    t.teardown(() => relay.stop());
    const unpublished = () => db.em().count(OutboxEvent, { publishedAt: null });
    // The start-up pass must be over before the first row exists: had it published that row, the
    // notify below would queue a cycle that then takes the second row early.
    await relay.drain();
    const firstWrittenAt = Date.now();
    await addWidget(db, events.created, "first");
    relay.notify();
    // Read from the table, not the subscription: a cycle marks its rows as it ends, while delivery
    // to a subscriber on a loaded machine can take longer than the window.
    await until(async () => (await unpublished()) === 0, "the first event", loaded);

    // The cycle that published it started a moment ago: this one waits out the rest of the 5 s.
    await addWidget(db, events.created, "second");
    relay.notify();
    await until(async () => (await unpublished()) === 0, "the second event after the window", loaded);
    // That cycle started after the first row was written, so a second cycle that kept the window
    // cannot have published before 5 s from then (20 ms for the relay's whole-millisecond clock).
    t.true(Date.now() - firstWrittenAt >= 5_000 - 20, "not relayed inside the coalescing window");

    await addWidget(db, events.created, "third");
    await relay.drain();
    await until(() => seen.length === 3, "the drained event");
    t.deepEqual(seen.map(text), ["first", "second", "third"]);
  });
}
