// A live stream's fan-out inside one instance: ONE bus subscription, each event decoded once (by
// the module's mapper), the same frame handed to every connected client, and each client sent
// whatever frames are ready in one batch. A client resuming from an event id first replays the history
// from the bus at its own pace (a short-lived subscription per page), then joins the live feed
// without a gap or a repeat.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ServerSentEventBatchSchema, type ServerSentEvent, type ServerSentEventBatch } from "../../../gen/meshwork/api/v1/sse_pb.js";
import type { BusMessage, EventBus, Logger, Stoppable } from "../bus/index.js";
import { StreamClient, type SequencedEvent } from "./stream-client.js";
import { connectedFrame, frozenFrame } from "./stream-frames.js";

export interface StreamHubOptions {
  bus: EventBus;
  /** The JetStream stream the events are read from. */
  stream: string;
  /**
   * The frame a bus message becomes, or undefined for one the stream does not show. Its `id` is
   * the message's sequence (`String(message.seq)`): that is what a client resumes from. Called
   * once per message and instance; the frame is frozen and shared by every client.
   */
  toEvent(message: BusMessage): ServerSentEvent | undefined;
  /** The frame telling a client that `count` events did not reach it (no id: a gap, not a position). */
  droppedEvent(count: number): ServerSentEvent;
  /** Events held for one slow client. */
  clientBufferSize: number;
  logger: Logger;
  /** How long the bus subscription outlives its last client, so reconnects do not churn it. */
  idleStopMs?: number;
}

export interface OpenStreamOptions {
  /** The Last-Event-ID the client sent (a bus sequence), if any. */
  resumeAfter?: number;
  /** The call's signal: the client went away, the stream ends and its resources go. */
  signal: AbortSignal;
}

export interface StreamHub {
  /**
   * Registers a client and answers its batches of frames: `: connected` first, then the replay
   * (when resuming), then live events. Fails (before any frame) when the bus cannot be reached.
   */
  open(options: OpenStreamOptions): Promise<AsyncIterable<ServerSentEventBatch>>;
  /** Connected clients, for status and tests. */
  readonly clientCount: number;
  stop(): Promise<void>;
}

const DEFAULT_IDLE_STOP_MS = 30_000;
// Every hand-out costs a message and a socket write per client, so with many clients the hub waits
// a little between two hand-outs and sends what arrived meanwhile as one batch: 50 µs per
// connected client (5 ms for 100, 50 ms for 1,000), never more than 50 ms. One client waits for
// nothing.
const COALESCE_US_PER_CLIENT = 50;
const MAX_COALESCE_MS = 50;

// Frozen: nobody changes a batch once handed over, and it says so to whoever could otherwise copy
// it defensively (an in-process transport). A run of events shared by many clients (see
// StreamClient.offerRun) becomes one batch, the same instance for every client, so the gateway
// renders and encodes it once.
const sharedBatches = new WeakMap<readonly ServerSentEvent[], ServerSentEventBatch>();
const batchOf = (events: readonly ServerSentEvent[]): ServerSentEventBatch => {
  let batch = sharedBatches.get(events);
  if (batch === undefined) {
    // Only the hub's runs arrive frozen; a client's own array is used once.
    const shared = Object.isFrozen(events);
    batch = Object.freeze(create(ServerSentEventBatchSchema, { events: Object.freeze(events) as ServerSentEvent[] }));
    if (shared) sharedBatches.set(events, batch);
  }
  return batch;
};

export function createStreamHub(options: StreamHubOptions): StreamHub {
  const { bus, stream, clientBufferSize, logger } = options;
  const log = logger.child({ component: "event-stream", stream });
  const toEvent = (message: BusMessage): ServerSentEvent | undefined => {
    const frame = options.toEvent(message);
    return frame && frozenFrame(frame);
  };
  const droppedEvent = (count: number): ServerSentEvent => frozenFrame(options.droppedEvent(count));
  const clients = new Set<StreamClient>();
  let live: Promise<Stoppable> | undefined;
  // Messages of an older subscription (one being stopped) are ignored: only the current one feeds.
  let generation = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  const shutdown = new AbortController();

  // Events wait in `pending` for the next hand-out (see COALESCE_US_PER_CLIENT). The bus also
  // hands over bursts in one go (a relay batch, a socket read of many messages): fanned out at
  // once, a burst larger than a client's buffer would overflow even a client that reads at once,
  // so a hand-out gives at most half a buffer and the rest follows on the next event-loop turn,
  // after clients drained. Only a client that really reads slower than events come loses any.
  const perTurn = Math.max(1, Math.ceil(clientBufferSize / 2));
  const pendingLimit = Math.max(1_000, clientBufferSize * 10);
  let pending: SequencedEvent[] = [];
  let pendingHead = 0;
  let pendingDropped = 0;
  let flushScheduled = false;
  let lastFlushAt = 0;

  const scheduleFlush = (): void => {
    if (flushScheduled) return;
    flushScheduled = true;
    const windowMs = Math.min(MAX_COALESCE_MS, (clients.size * COALESCE_US_PER_CLIENT) / 1000);
    const wait = lastFlushAt + windowMs - performance.now();
    if (wait >= 1) setTimeout(flush, wait);
    else setImmediate(flush);
  };

  const flush = (): void => {
    lastFlushAt = performance.now();
    if (pendingDropped > 0) {
      for (const client of clients) client.missedLive(pendingDropped);
      pendingDropped = 0;
    }
    const end = Math.min(pending.length, pendingHead + perTurn);
    const run = pending.slice(pendingHead, end);
    pendingHead = end;
    const frames = Object.freeze(run.map((event) => event.frame));
    for (const client of clients) client.offerRun(run, frames);
    if (pendingHead < pending.length) {
      setImmediate(flush);
      return;
    }
    pending = [];
    pendingHead = 0;
    flushScheduled = false;
  };

  const fanOut = (mine: number) => (message: BusMessage) => {
    if (mine !== generation || clients.size === 0) return;
    const frame = toEvent(message);
    if (!frame) return;
    pending.push({ seq: message.seq, frame });
    if (pending.length - pendingHead > pendingLimit) {
      // Clients as a whole cannot keep up: the hub drops its oldest, and each client is told.
      pending[pendingHead++] = undefined as unknown as SequencedEvent;
      pendingDropped++;
    }
    scheduleFlush();
  };

  function ensureLive(): Promise<Stoppable> {
    clearTimeout(idleTimer);
    idleTimer = undefined;
    if (!live) {
      const mine = ++generation;
      live = bus.subscribe({ stream }, fanOut(mine));
      // A failed start is not cached: the next client tries again.
      live.catch(() => {
        if (generation === mine) live = undefined;
      });
    }
    return live;
  }

  function stopLive(): void {
    const current = live;
    live = undefined;
    generation++;
    void current?.then((s) => s.stop()).catch((err: unknown) => log.warn({ err }, "stopping the stream subscription failed"));
  }

  function detach(client: StreamClient): void {
    client.close();
    if (!clients.delete(client) || clients.size > 0 || stopped) return;
    idleTimer = setTimeout(stopLive, options.idleStopMs ?? DEFAULT_IDLE_STOP_MS);
    idleTimer.unref();
  }

  /** Up to `max` bus messages from `from` on, stopping early at `through`; [] when cut short. */
  async function readPage(from: number, through: number, max: number, signal: AbortSignal): Promise<BusMessage[]> {
    const page: BusMessage[] = [];
    let complete = false;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const subscription = await bus.subscribe({ stream, startSeq: from }, (m) => {
      if (complete) return;
      page.push(m);
      if (page.length >= max || m.seq >= through) {
        complete = true;
        done();
      }
    });
    const signals = [signal, shutdown.signal];
    for (const s of signals) s.addEventListener("abort", done, { once: true });
    try {
      if (!signals.some((s) => s.aborted)) await finished;
    } finally {
      for (const s of signals) s.removeEventListener("abort", done);
      await subscription.stop();
    }
    return complete ? page : [];
  }

  /** The connected comment and, for a resuming client, the replay; the client is live after it. */
  async function* opening(client: StreamClient, replayThrough: number | undefined, signal: AbortSignal) {
    yield batchOf([connectedFrame]);
    if (replayThrough === undefined) return;
    let through = replayThrough;
    while (!client.isClosed) {
      while (client.lastSeq < through && !client.isClosed) {
        const from = client.lastSeq + 1;
        const page = await readPage(from, through, client.capacity, signal);
        if (page.length === 0) break;
        // Sequences are contiguous in the stream: a jump means history no longer retained.
        client.noteDropped(page[0]!.seq - from);
        for (const m of page) client.accept(m.seq, toEvent(m));
        // The next page is read only once this one is sent: a replay never overflows the buffer.
        if (client.hasBuffered()) {
          const batch = await client.nextBatch();
          if (!batch) return;
          yield batchOf(batch);
        }
      }
      if (client.isClosed || !client.heldOverflowed) {
        client.goLive();
        return;
      }
      // Live events were dropped while replaying: replay on, up to the oldest one still held
      // (or the stream's end), then look again.
      client.heldOverflowed = false;
      const oldestHeld = client.held?.[0];
      through = oldestHeld ? oldestHeld.seq - 1 : (await bus.streamInfo(stream)).lastSeq;
    }
  }

  /**
   * A client's batches: the opening, then live ones. Live, a pull is one step from the client's
   * buffer, not a generator's: with a thousand clients, every layer a pull goes through is paid a
   * thousand times per hand-out. The client is detached when the stream ends, fails or is left.
   */
  function frames(client: StreamClient, replayThrough: number | undefined, signal: AbortSignal): AsyncIterable<ServerSentEventBatch> {
    const start = opening(client, replayThrough, signal);
    let live = false;
    let finished = false;
    const finish = (): IteratorResult<ServerSentEventBatch> => {
      if (!finished) {
        finished = true;
        detach(client);
      }
      return { done: true, value: undefined };
    };
    const failed = (error: unknown): never => {
      finish();
      throw error;
    };
    const liveBatch = (): IteratorResult<ServerSentEventBatch> | Promise<IteratorResult<ServerSentEventBatch>> => {
      const batch = client.take();
      if (batch === undefined) return finish();
      // Woken without anything to take (it cannot happen today, but a spurious wake must not end the stream).
      return batch.length > 0 ? { done: false, value: batchOf(batch) } : liveNext();
    };
    const liveNext = (): Promise<IteratorResult<ServerSentEventBatch>> => client.ready().then(liveBatch, failed);
    const iterator: AsyncIterator<ServerSentEventBatch> = {
      next() {
        if (finished) return Promise.resolve({ done: true, value: undefined });
        if (live) return liveNext();
        return start.next().then((result) => {
          if (!result.done) return result;
          live = true;
          return liveNext();
        }, failed);
      },
      async return() {
        finish();
        await start.return(undefined);
        return { done: true, value: undefined };
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }

  return {
    get clientCount() {
      return clients.size;
    },

    async open({ resumeAfter, signal }) {
      if (stopped) throw new ConnectError("the event stream is shutting down", Code.Unavailable);
      const client = new StreamClient(clientBufferSize, droppedEvent);
      let replayThrough: number | undefined;
      try {
        await ensureLive();
        if (resumeAfter !== undefined) {
          // Registered (holding live events) before the end of history is read: whatever is
          // published after that point reaches the client live, the rest by replay.
          client.held = [];
          clients.add(client);
          const { lastSeq } = await bus.streamInfo(stream);
          if (resumeAfter <= lastSeq) {
            client.lastSeq = resumeAfter;
            replayThrough = lastSeq;
          } else {
            // An id from another history (a reset embedded bus, a new stream): start live.
            client.goLive();
          }
        } else {
          clients.add(client);
        }
      } catch (err) {
        detach(client);
        log.warn({ err }, "event stream could not subscribe to the bus");
        throw new ConnectError("the event stream is unavailable", Code.Unavailable);
      }
      // The call's end (client gone, server shutting down) ends the frames and frees the client.
      const onAbort = () => detach(client);
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      return frames(client, replayThrough, signal);
    },

    async stop() {
      stopped = true;
      shutdown.abort();
      clearTimeout(idleTimer);
      for (const client of clients) client.close();
      clients.clear();
      const current = live;
      live = undefined;
      generation++;
      await current?.then((s) => s.stop()).catch(() => undefined);
    },
  };
}
