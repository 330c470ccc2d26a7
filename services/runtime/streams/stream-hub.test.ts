// The stream hub on the in-process bus: one subscription fanned out, the bounded per-client
// buffer with its `dropped` notice, Last-Event-ID replay and its hand-over to live delivery, and
// skipped messages. The hub is fed tracking's stream and mapper, as the tracking module feeds it.
import { create, createRegistry, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import test from "ava";
import { ServerSentEventSchema, type ServerSentEvent, type ServerSentEventBatch } from "../../../gen/meshwork/api/v1/sse_pb.js";
import { DataChangedSchema, DroppedSchema, file_tracking_v1_event_stream } from "../../../gen/tracking/v1/event_stream_pb.js";
import {
  AssetDeletedSchema,
  IntegrationFeedCreatedSchema,
  ObservationRecordedSchema,
  SpeedAlertAcknowledgedSchema,
  SpeedAlertRaisedSchema,
} from "../../../gen/tracking/v1/events_pb.js";
import { ObservationSchema } from "../../../gen/tracking/v1/observation_pb.js";
import { droppedEvent, toStreamEvent } from "../../tracking/events/stream-mapping.js";
import { subjects, trackingStream } from "../../tracking/events/subjects.js";
import { openBus, type EventBus } from "../bus/index.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { until } from "../../../test/support/until.js";
import { StreamClient } from "./stream-client.js";
import { createStreamHub, type StreamHub } from "./stream-hub.js";

const logger = testLogger("stream-hub.test");
const registry = createRegistry(file_tracking_v1_event_stream, ObservationSchema);

interface Fixture {
  bus: EventBus;
  hub: StreamHub;
  /** Publishes an observation event; answers its sequence. */
  observation(n: number): Promise<number>;
  publish<S extends DescMessage>(subject: string, schema: S, init: MessageInitShape<S>): Promise<number>;
}

async function fixture(
  t: import("ava").ExecutionContext,
  opts: { clientBufferSize?: number; replayWindow?: number } = {},
): Promise<Fixture> {
  const bus = await openBus({ logger, replayWindow: opts.replayWindow });
  await bus.ensureStreams([trackingStream]);
  const hub = createStreamHub({
    bus,
    stream: trackingStream.name,
    toEvent: toStreamEvent,
    droppedEvent,
    clientBufferSize: opts.clientBufferSize ?? 100,
    logger,
  });
  t.teardown(async () => {
    await hub.stop();
    await bus.close();
  });
  let n = 0;
  const publish: Fixture["publish"] = async (subject, schema, init) =>
    (await bus.publish(subject, toBinary(schema, create(schema, init)), { id: `e-${++n}` })).seq;
  return {
    bus,
    hub,
    publish,
    observation: (i) => publish(subjects.observationRecorded, ObservationRecordedSchema, { observation: { id: `obs-${i}`, latitude: i } }),
  };
}

/** What a client reads, in a form easy to compare: `name#id:detail`. */
function describe(frame: ServerSentEvent): string {
  if (frame.comment) return `: ${frame.comment}`;
  const data = frame.data && anyUnpack(frame.data, registry);
  let detail = "";
  if (data?.$typeName === ObservationSchema.typeName) detail = (data as unknown as { id: string }).id;
  else if (data?.$typeName === DroppedSchema.typeName) detail = String((data as unknown as { count: number }).count);
  else if (data?.$typeName === DataChangedSchema.typeName) {
    const c = data as unknown as { entity: string; action: string; id: string };
    detail = `${c.entity}.${c.action}.${c.id}`;
  }
  return `${frame.event}${frame.id ? `#${frame.id}` : ""}:${detail}`;
}

/** Reads batches until `count` frames are in (a batch is never split: more may come). */
async function read(batches: AsyncIterator<ServerSentEventBatch>, count: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < count) {
    const next = await batches.next();
    if (next.done) break;
    out.push(...next.value.events.map(describe));
  }
  return out;
}

test("a client that does not read loses the oldest events and is told how many, where they were", async (t) => {
  const client = new StreamClient(3, droppedEvent);
  const frame = (seq: number) => ({ seq, frame: create(ServerSentEventSchema, { event: "e", id: String(seq) }) });
  for (let seq = 1; seq <= 5; seq++) client.offer(frame(seq));
  const first = (await client.nextBatch())!;
  t.deepEqual(
    first.map((f) => f.event + f.id),
    ["dropped", "e3", "e4", "e5"],
  );
  t.is(fromBinary(DroppedSchema, first[0]!.data!.value).count, 2);
  // A gap the hub reports lands between what came before and after it.
  client.offer(frame(6));
  client.noteDropped(4);
  client.offer(frame(11));
  const second = (await client.nextBatch())!;
  t.deepEqual(
    second.map((f) => f.event + f.id),
    ["e6", "dropped", "e11"],
  );
  t.is(fromBinary(DroppedSchema, second[1]!.data!.value).count, 4);
  const waiting = client.nextBatch();
  client.close();
  t.is(await waiting, undefined, "closing ends a waiting read");
});

test("a run reaches caught-up clients as the hub's own frames; a client holding others keeps order", (t) => {
  const frame = (seq: number) => ({ seq, frame: create(ServerSentEventSchema, { event: "e", id: String(seq) }) });
  const run = [frame(2), frame(3)];
  const frames = Object.freeze(run.map((e) => e.frame));
  const caughtUp = new StreamClient(10, droppedEvent);
  const alsoCaughtUp = new StreamClient(10, droppedEvent);
  const behind = new StreamClient(10, droppedEvent);
  behind.offer(frame(1));
  for (const client of [caughtUp, alsoCaughtUp, behind]) client.offerRun(run, frames);
  t.is(caughtUp.take(), frames, "the very array the hub made");
  t.is(alsoCaughtUp.take(), frames);
  t.deepEqual(
    behind.take()!.map((f) => f.id),
    ["1", "2", "3"],
  );
  // Something after the run but before the read: the run becomes the client's own, then the rest.
  alsoCaughtUp.offerRun([frame(4)], Object.freeze([frame(4).frame]));
  alsoCaughtUp.noteDropped(2);
  t.deepEqual(
    alsoCaughtUp.take()!.map((f) => f.event + f.id),
    ["e4", "dropped"],
  );
  // Already seen: ignored, never shared twice.
  caughtUp.offerRun(run, frames);
  t.deepEqual(caughtUp.take(), []);
});

test("clients that keep up read one batch instance per hand-out, shared by all of them", async (t) => {
  const f = await fixture(t);
  const signal = new AbortController().signal;
  const a = (await f.hub.open({ signal }))[Symbol.asyncIterator]();
  const b = (await f.hub.open({ signal }))[Symbol.asyncIterator]();
  await a.next();
  await b.next();
  await f.observation(1);
  await f.observation(2);
  const [fromA, fromB] = await Promise.all([a.next(), b.next()]);
  t.deepEqual(fromA.value!.events.map(describe), ["observation#1:obs-1", "observation#2:obs-2"]);
  t.is(fromA.value, fromB.value);
  t.true(Object.isFrozen(fromA.value));
});

test("every client gets each event once, in order; a slow one drops its oldest without holding back the rest", async (t) => {
  const f = await fixture(t, { clientBufferSize: 3 });
  const signal = new AbortController().signal;
  const fast = (await f.hub.open({ signal }))[Symbol.asyncIterator]();
  const slow = (await f.hub.open({ signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(fast, 1), [": connected"]);
  t.deepEqual(await read(slow, 1), [": connected"]);
  const fastSeen = read(fast, 8);
  for (let i = 1; i <= 8; i++) await f.observation(i);
  t.deepEqual(
    await fastSeen,
    [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `observation#${i}:obs-${i}`),
  );
  // The slow reader read nothing since `connected`: of eight events its buffer of three kept the newest.
  t.deepEqual(await read(slow, 4), ["dropped:5", "observation#6:obs-6", "observation#7:obs-7", "observation#8:obs-8"]);
  t.is(f.hub.clientCount, 2);
});

test("a resuming client gets exactly what it missed, then live events", async (t) => {
  const f = await fixture(t);
  for (let i = 1; i <= 5; i++) await f.observation(i);
  const frames = (await f.hub.open({ resumeAfter: 2, signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 4), [": connected", "observation#3:obs-3", "observation#4:obs-4", "observation#5:obs-5"]);
  const live = read(frames, 1);
  await f.observation(6);
  t.deepEqual(await live, ["observation#6:obs-6"]);
});

test("live events published during a long replay are neither lost nor repeated", async (t) => {
  // A buffer of two: the replay goes page by page, and the live events held meanwhile overflow.
  const f = await fixture(t, { clientBufferSize: 2 });
  for (let i = 1; i <= 6; i++) await f.observation(i);
  const frames = (await f.hub.open({ resumeAfter: 0, signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 1), [": connected"]);
  for (let i = 7; i <= 12; i++) await f.observation(i);
  // Let the hub hand out the live ones (held while replaying, two at most) before the client
  // reads on, so the replay has to go past where it started.
  for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
  t.deepEqual(
    await read(frames, 12),
    Array.from({ length: 12 }, (_, k) => `observation#${k + 1}:obs-${k + 1}`),
  );
});

test("when the clients as a whole fall behind a burst, the hub drops its oldest and every client is told", async (t) => {
  const f = await fixture(t, { clientBufferSize: 100 });
  const frames = (await f.hub.open({ signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 1), [": connected"]);
  // Published back to back, 1,100 events reach the hub in one delivery; it queues 1,000 at most.
  const published: Promise<number>[] = [];
  for (let i = 1; i <= 1100; i++) published.push(f.observation(i));
  await Promise.all(published);
  const got = await read(frames, 1001);
  t.is(got[0], "dropped:100");
  t.is(got[1], "observation#101:obs-101");
  t.is(got.at(-1), "observation#1100:obs-1100");
  t.is(new Set(got).size, 1001, "nothing twice");
});

test("a resume older than the retained history starts at the oldest kept, after a dropped notice", async (t) => {
  const f = await fixture(t, { replayWindow: 3 });
  for (let i = 1; i <= 6; i++) await f.observation(i);
  // Events 2 and 3 are gone (the window keeps 4 to 6).
  const frames = (await f.hub.open({ resumeAfter: 1, signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 5), [": connected", "dropped:2", "observation#4:obs-4", "observation#5:obs-5", "observation#6:obs-6"]);
});

test("an id beyond the stream's end (another history) starts live", async (t) => {
  const f = await fixture(t);
  await f.observation(1);
  const frames = (await f.hub.open({ resumeAfter: 500, signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 1), [": connected"]);
  const next = read(frames, 1);
  await f.observation(2);
  t.deepEqual(await next, ["observation#2:obs-2"]);
});

test("subjects map to stream events; others are skipped without breaking a replay", async (t) => {
  const f = await fixture(t);
  await f.publish(subjects.speedAlertRaised, SpeedAlertRaisedSchema, { speedAlert: { id: "sa-1", speedKmh: 150 } });
  await f.publish(subjects.speedAlertAcknowledged, SpeedAlertAcknowledgedSchema, { speedAlert: { id: "sa-1" } });
  await f.publish(subjects.assetDeleted, AssetDeletedSchema, { asset: { id: "a-1" } });
  await f.publish("tracking.v1.integration_feed.created", IntegrationFeedCreatedSchema, { integrationFeed: { id: "feed-1" } });
  const frames = (await f.hub.open({ resumeAfter: 0, signal: new AbortController().signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 4), [
    ": connected",
    "speed_alert#1:",
    "data_changed#3:asset.deleted.a-1",
    "data_changed#4:integration_feed.created.feed-1",
  ]);
});

test("a client whose call ends leaves the hub", async (t) => {
  const f = await fixture(t);
  const abort = new AbortController();
  const frames = (await f.hub.open({ signal: abort.signal }))[Symbol.asyncIterator]();
  t.deepEqual(await read(frames, 1), [": connected"]);
  t.is(f.hub.clientCount, 1);
  const pending = frames.next();
  abort.abort();
  t.true((await pending).done, "a waiting read ends");
  await until(() => f.hub.clientCount === 0, "the client to leave");
  t.is(f.hub.clientCount, 0);
});
