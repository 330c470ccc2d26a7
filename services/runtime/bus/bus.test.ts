// One behavioural suite for both adapters: the in-process bus always, NATS JetStream when NATS_URL is set.
import { randomBytes } from "node:crypto";
import test, { type ExecutionContext } from "ava";
import { connect } from "nats";
import { openBus, type BusMessage, type EventBus, type StreamDefinition } from "./index.js";
import { realServers } from "../../../test/support/real-infra.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { until } from "../../../test/support/until.js";

const logger = testLogger("bus.test");
const natsUrl = realServers(test, "nats", ["nats"])?.natsUrl;
const encode = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

interface Fixture {
  bus: EventBus;
  stream: StreamDefinition;
  /** A subject under this run's own prefix, so runs against a shared server never meet. */
  subject(rest: string): string;
}

async function fixture(t: ExecutionContext, url: string | undefined): Promise<Fixture> {
  const suffix = randomBytes(4).toString("hex");
  const prefix = `bustest${suffix}`;
  const stream: StreamDefinition = { name: `BUSTEST_${suffix.toUpperCase()}`, subjects: [`${prefix}.>`] };
  const bus = await openBus({ url, logger, name: "bus.test" });
  t.teardown(async () => {
    await bus.close();
    if (url) {
      const nc = await connect({ servers: url });
      const jsm = await nc.jetstreamManager();
      await jsm.streams.delete(stream.name).catch(() => undefined);
      await nc.close();
    }
  });
  await bus.ensureStreams([stream]);
  return { bus, stream, subject: (rest) => `${prefix}.${rest}` };
}

/** Waits (without asserting on time) until the condition holds; fails the test if it never does. */

const adapters: { name: string; url: string | undefined }[] = [{ name: "memory", url: undefined }];
if (natsUrl) adapters.push({ name: "nats", url: natsUrl });

for (const adapter of adapters) {
  const name = (title: string) => `${adapter.name}: ${title}`;

  test(name("reports its kind and health"), async (t) => {
    const { bus } = await fixture(t, adapter.url);
    t.is(bus.kind, adapter.name as "memory" | "nats");
    t.deepEqual(await bus.health(), { ok: true });
    await bus.close();
    t.false((await bus.health()).ok);
  });

  test(name("a durable consumer receives published messages in order with id, headers and sequence"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    const acks = [];
    for (const n of [1, 2, 3]) {
      acks.push(
        await bus.publish(subject("item.created"), encode(`m${n}`), {
          id: `evt-${n}`,
          headers: { traceparent: `00-${"a".repeat(32)}-${"b".repeat(15)}${n}-01`, "content-type": "application/protobuf" },
        }),
      );
    }
    t.deepEqual(
      acks.map((a) => [a.stream, a.duplicate]),
      [
        [stream.name, false],
        [stream.name, false],
        [stream.name, false],
      ],
    );
    t.true(acks[0]!.seq < acks[1]!.seq && acks[1]!.seq < acks[2]!.seq);

    const got: BusMessage[] = [];
    const consumer = await bus.consume({ stream: stream.name, durable: "reader" }, async (m) => {
      got.push(m);
    });
    t.teardown(() => consumer.stop());
    await until(() => got.length === 3, "three messages");
    t.deepEqual(
      got.map((m) => decode(m.data)),
      ["m1", "m2", "m3"],
    );
    const first = got[0]!;
    t.is(first.id, "evt-1");
    t.is(first.subject, subject("item.created"));
    t.is(first.stream, stream.name);
    t.is(first.seq, acks[0]!.seq);
    t.false(first.redelivered);
    t.true(first.timestamp instanceof Date && !Number.isNaN(first.timestamp.getTime()));
    t.deepEqual(first.headers, { traceparent: `00-${"a".repeat(32)}-${"b".repeat(15)}1-01`, "content-type": "application/protobuf" });
  });

  test(name("filter subjects with * and > select what a consumer sees"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    for (const [i, s] of ["a.created", "b.created", "a.deleted.soft", "c.updated"].entries()) {
      await bus.publish(subject(s), encode(s), { id: `f-${i}` });
    }
    const seen = { tail: [] as string[], star: [] as string[], several: [] as string[] };
    const stops = await Promise.all([
      bus.consume({ stream: stream.name, durable: "tail", filterSubjects: [subject("a.>")] }, async (m) => {
        seen.tail.push(decode(m.data));
      }),
      bus.consume({ stream: stream.name, durable: "star", filterSubjects: [subject("*.created")] }, async (m) => {
        seen.star.push(decode(m.data));
      }),
      bus.consume({ stream: stream.name, durable: "several", filterSubjects: [subject("c.*"), subject("a.deleted.>")] }, async (m) => {
        seen.several.push(decode(m.data));
      }),
    ]);
    t.teardown(() => Promise.all(stops.map((s) => s.stop())));
    // A sentinel every filter matches? None does, so wait on each expected count instead.
    await until(() => seen.tail.length === 2 && seen.star.length === 2 && seen.several.length === 2, "filtered deliveries");
    t.deepEqual(seen.tail, ["a.created", "a.deleted.soft"]);
    t.deepEqual(seen.star, ["a.created", "b.created"]);
    t.deepEqual(seen.several, ["a.deleted.soft", "c.updated"]);
  });

  test(name("a second publish with the same id is a duplicate and is delivered once"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    const first = await bus.publish(subject("x.done"), encode("once"), { id: "same-id" });
    const again = await bus.publish(subject("x.done"), encode("twice"), { id: "same-id" });
    t.false(first.duplicate);
    t.true(again.duplicate);
    t.is(again.seq, first.seq);
    await bus.publish(subject("x.done"), encode("sentinel"), { id: "other-id" });
    const got: string[] = [];
    const consumer = await bus.consume({ stream: stream.name, durable: "dedupe" }, async (m) => {
      got.push(decode(m.data));
    });
    t.teardown(() => consumer.stop());
    await until(() => got.includes("sentinel"), "the sentinel");
    t.deepEqual(got, ["once", "sentinel"]);
  });

  test(name("a handler that throws gets the message again, marked redelivered"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    await bus.publish(subject("job.queued"), encode("flaky"), { id: "r-1" });
    await bus.publish(subject("job.queued"), encode("fine"), { id: "r-2" });
    const deliveries: { body: string; redelivered: boolean }[] = [];
    let failuresLeft = 2;
    const consumer = await bus.consume(
      { stream: stream.name, durable: "retrying", retry: { initialDelayMs: 20, maxDelayMs: 100 } },
      async (m) => {
        deliveries.push({ body: decode(m.data), redelivered: m.redelivered });
        if (decode(m.data) === "flaky" && failuresLeft-- > 0) throw new Error("transient");
      },
    );
    t.teardown(() => consumer.stop());
    await until(() => deliveries.filter((d) => d.body === "flaky").length === 3, "two redeliveries");
    const flaky = deliveries.filter((d) => d.body === "flaky");
    t.deepEqual(
      flaky.map((d) => d.redelivered),
      [false, true, true],
    );
    t.deepEqual(
      deliveries.filter((d) => d.body === "fine"),
      [{ body: "fine", redelivered: false }],
      "a failing message does not block or repeat the others",
    );
  });

  test(name("a durable consumer resumes after its last ack when restarted"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    const got: string[] = [];
    const handler = async (m: BusMessage) => {
      got.push(decode(m.data));
    };
    await bus.publish(subject("e.one"), encode("1"), { id: "d-1" });
    await bus.publish(subject("e.two"), encode("2"), { id: "d-2" });
    const first = await bus.consume({ stream: stream.name, durable: "resumer" }, handler);
    await until(() => got.length === 2, "the first two");
    await first.stop();

    await bus.publish(subject("e.three"), encode("3"), { id: "d-3" });
    await bus.publish(subject("e.four"), encode("4"), { id: "d-4" });
    const second = await bus.consume({ stream: stream.name, durable: "resumer" }, handler);
    t.teardown(() => second.stop());
    await until(() => got.length >= 4, "the next two");
    t.deepEqual(got, ["1", "2", "3", "4"]);
  });

  test(name("deliverFrom 'new' skips what was published before the durable existed"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    await bus.publish(subject("old.news"), encode("old"), { id: "n-1" });
    const got: string[] = [];
    const consumer = await bus.consume({ stream: stream.name, durable: "fresh", deliverFrom: "new" }, async (m) => {
      got.push(decode(m.data));
    });
    t.teardown(() => consumer.stop());
    await bus.publish(subject("new.news"), encode("new"), { id: "n-2" });
    await until(() => got.length >= 1, "the new message");
    t.deepEqual(got, ["new"]);
  });

  test(name("subscribe replays from a start sequence and then follows live messages"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    const seqs: number[] = [];
    for (const n of [1, 2, 3, 4]) seqs.push((await bus.publish(subject(`s.n${n}`), encode(`${n}`), { id: `s-${n}` })).seq);

    const replayed: string[] = [];
    const fromThird = await bus.subscribe({ stream: stream.name, startSeq: seqs[2] }, (m) => {
      replayed.push(decode(m.data));
    });
    t.teardown(() => fromThird.stop());
    const filtered: string[] = [];
    const onlyFive = await bus.subscribe({ stream: stream.name, startSeq: seqs[0], filterSubjects: [subject("s.n5")] }, (m) => {
      filtered.push(decode(m.data));
    });
    t.teardown(() => onlyFive.stop());
    const live: string[] = [];
    const liveOnly = await bus.subscribe({ stream: stream.name }, (m) => {
      live.push(decode(m.data));
    });
    t.teardown(() => liveOnly.stop());

    await until(() => replayed.length === 2, "the replay");
    await bus.publish(subject("s.n5"), encode("5"), { id: "s-5" });
    await until(() => replayed.length === 3 && live.length === 1 && filtered.length === 1, "the live message");
    t.deepEqual(replayed, ["3", "4", "5"]);
    t.deepEqual(live, ["5"]);
    t.deepEqual(filtered, ["5"]);
  });

  test(name("streamInfo gives the first and last sequence a stream holds"), async (t) => {
    const { bus, stream, subject } = await fixture(t, adapter.url);
    t.deepEqual(await bus.streamInfo(stream.name), { firstSeq: 1, lastSeq: 0 });
    const first = await bus.publish(subject("i.one"), encode("1"), { id: "i-1" });
    const second = await bus.publish(subject("i.two"), encode("2"), { id: "i-2" });
    t.deepEqual(await bus.streamInfo(stream.name), { firstSeq: first.seq, lastSeq: second.seq });
  });

  test(name("publishing to a subject no stream captures is an error, not a silent drop"), async (t) => {
    const { bus } = await fixture(t, adapter.url);
    await t.throwsAsync(bus.publish(`nowhere${randomBytes(4).toString("hex")}.x`, encode("lost"), { id: "lost-1" }));
  });
}

test("memory: retention keeps at most maxMsgs and a consumer starts at the oldest kept", async (t) => {
  const bus = await openBus({ logger });
  t.teardown(() => bus.close());
  await bus.ensureStreams([{ name: "SMALL", subjects: ["small.>"], maxMsgs: 2 }]);
  for (const n of [1, 2, 3]) await bus.publish("small.x", encode(`${n}`), { id: `k-${n}` });
  const got: number[] = [];
  const consumer = await bus.consume({ stream: "SMALL", durable: "late" }, async (m) => {
    got.push(m.seq);
  });
  t.teardown(() => consumer.stop());
  await until(() => got.length === 2, "the kept messages");
  t.deepEqual(got, [2, 3]);
});

test("memory: duplicates are recognised within the window, among at most maxMsgs recent ids", async (t) => {
  const bus = await openBus({ logger });
  t.teardown(() => bus.close());
  await bus.ensureStreams([
    { name: "FEW", subjects: ["few.>"], maxMsgs: 3 },
    { name: "BRIEF", subjects: ["brief.>"], duplicateWindowMs: 1 },
  ]);
  for (const n of [1, 2, 3, 4]) await bus.publish("few.x", encode(`${n}`), { id: `f-${n}` });
  const recent = await bus.publish("few.x", encode("4 again"), { id: "f-4" });
  t.like(recent, { duplicate: true, seq: 4 });
  t.like(await bus.publish("few.x", encode("1 again"), { id: "f-1" }), { duplicate: false, seq: 5 }, "the oldest id was let go");

  const first = await bus.publish("brief.x", encode("a"), { id: "b-1" });
  // The window is one millisecond: wait it out on the clock, not on a timer.
  const publishedAt = Date.now();
  await until(() => Date.now() > publishedAt + 1, "the window to pass");
  t.like(await bus.publish("brief.x", encode("a again"), { id: "b-1" }), { duplicate: false, seq: first.seq + 1 });
});

test("memory: streams with overlapping subjects are refused, as NATS does", async (t) => {
  const bus = await openBus({ logger });
  t.teardown(() => bus.close());
  await bus.ensureStreams([{ name: "WIDE", subjects: ["wide.>"] }]);
  await t.throwsAsync(bus.ensureStreams([{ name: "NARROW", subjects: ["wide.v1.*"] }]), { message: /overlap/ });
});

test("memory: the replay window keeps the newest messages once no durable consumer needs older ones", async (t) => {
  const bus = await openBus({ logger, replayWindow: 3 });
  t.teardown(() => bus.close());
  await bus.ensureStreams([{ name: "WINDOW", subjects: ["window.>"] }]);
  for (const n of [1, 2, 3, 4, 5]) await bus.publish("window.x", encode(`${n}`), { id: `w-${n}` });
  t.deepEqual(await bus.streamInfo("WINDOW"), { firstSeq: 3, lastSeq: 5 });
  const replayed: number[] = [];
  const sub = await bus.subscribe({ stream: "WINDOW", startSeq: 1 }, (m) => replayed.push(m.seq));
  t.teardown(() => sub.stop());
  await until(() => replayed.length === 3, "the retained messages");
  t.deepEqual(replayed, [3, 4, 5], "a replay from before the window starts at the oldest kept");
});

test("memory: a lagging durable consumer keeps its messages beyond the replay window, up to maxMsgs", async (t) => {
  const bus = await openBus({ logger, replayWindow: 2 });
  t.teardown(() => bus.close());
  await bus.ensureStreams([{ name: "LAG", subjects: ["lag.>"], maxMsgs: 6 }]);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const got: number[] = [];
  const consumer = await bus.consume({ stream: "LAG", durable: "slow" }, async (m) => {
    got.push(m.seq);
    await gate;
  });
  t.teardown(() => consumer.stop());
  for (const n of [1, 2, 3, 4, 5]) await bus.publish("lag.x", encode(`${n}`), { id: `l-${n}` });
  await until(() => got.length === 1, "the first delivery");
  t.deepEqual(await bus.streamInfo("LAG"), { firstSeq: 1, lastSeq: 5 }, "nothing the consumer still needs is dropped");
  for (const n of [6, 7, 8]) await bus.publish("lag.x", encode(`${n}`), { id: `l-${n}` });
  t.deepEqual(await bus.streamInfo("LAG"), { firstSeq: 3, lastSeq: 8 }, "maxMsgs stays the ceiling");
  release();
  await until(() => got.length === 7, "the rest");
  t.deepEqual(got, [1, 3, 4, 5, 6, 7, 8]);
  await bus.publish("lag.x", encode("9"), { id: "l-9" });
  await until(() => got.length === 8, "the ninth");
  t.deepEqual(await bus.streamInfo("LAG"), { firstSeq: 8, lastSeq: 9 }, "once consumed, the window applies");
});
