// In-process event bus with JetStream's model: subject-bound streams, per-stream sequences, Msg-Id dedupe,
// bounded retention, durable consumers with redelivery, and ordered ephemeral subscriptions.
import { DEFAULT_RETRY, retryDelay } from "./retry-delay.js";
import { assertValidSubject, matchesAny, subjectMatches, subjectsOverlap } from "./subject-match.js";
import type {
  BusHealth,
  BusMessage,
  ConsumeOptions,
  EventBus,
  Logger,
  PublishAck,
  PublishOptions,
  Stoppable,
  StreamDefinition,
  StreamInfo,
  SubscribeOptions,
} from "./types.js";

const DEFAULT_MAX_MSGS = 100_000;
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

interface StoredMessage {
  seq: number;
  subject: string;
  id: string;
  data: Uint8Array;
  headers: Record<string, string>;
  timestamp: Date;
}

class MemoryStream {
  definition: StreamDefinition;
  /**
   * Contiguous by sequence from `head` on: retention only ever drops from the front, by moving
   * `head`, and the array is compacted now and then, so a full stream costs O(1) per publish.
   */
  private messages: StoredMessage[] = [];
  private head = 0;
  lastSeq = 0;
  /**
   * Event ids of the duplicate window: id → sequence, and the ids with their publish times in
   * publish order from `seenHead` on, so pruning looks only at the front. At most as many as the
   * stream's message ceiling are kept (JetStream keeps the whole window; at 20,000 events a second a
   * two-minute window held 2.4 million ids here, and collecting them was a tenth of the process's CPU).
   */
  private seen = new Map<string, number>();
  private seenIds: string[] = [];
  private seenAt: number[] = [];
  private seenHead = 0;
  private listeners = new Set<() => void>();

  /**
   * @param window messages kept for replay once no durable consumer needs them (undefined: up to maxMsgs)
   * @param neededFrom lowest sequence a durable consumer of this stream has yet to finish
   */
  constructor(
    definition: StreamDefinition,
    private readonly window: number | undefined,
    private readonly neededFrom: () => number,
  ) {
    this.definition = definition;
  }

  get size(): number {
    return this.messages.length - this.head;
  }

  get firstSeq(): number {
    this.expire();
    return this.messages[this.head]?.seq ?? this.lastSeq + 1;
  }

  get(seq: number): StoredMessage | undefined {
    this.expire();
    const first = this.messages[this.head];
    return first && seq >= first.seq ? this.messages[this.head + seq - first.seq] : undefined;
  }

  append(subject: string, data: Uint8Array, opts: PublishOptions): PublishAck {
    const now = Date.now();
    this.forgetIds(now);
    const earlier = this.seen.get(opts.id);
    if (earlier !== undefined) return { stream: this.definition.name, seq: earlier, duplicate: true };

    const seq = ++this.lastSeq;
    // Copies keep a later mutation of the caller's buffer or headers from rewriting history.
    this.messages.push({
      seq,
      subject,
      id: opts.id,
      data: new Uint8Array(data),
      headers: { ...opts.headers },
      timestamp: new Date(now),
    });
    this.seen.set(opts.id, seq);
    this.seenIds.push(opts.id);
    this.seenAt.push(now);
    this.trim();
    this.expire();
    for (const listener of this.listeners) listener();
    return { stream: this.definition.name, seq, duplicate: false };
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * maxMsgs is a hard ceiling, as in JetStream. Below it, the replay window keeps the newest
   * messages and anything a durable consumer has not finished yet, so a short window never costs
   * a lagging consumer its events.
   */
  private trim(): void {
    const ceiling = this.definition.maxMsgs ?? DEFAULT_MAX_MSGS;
    let drop = this.size - ceiling;
    if (this.window !== undefined && this.size > this.window) {
      const first = this.messages[this.head]!.seq;
      const unneeded = this.neededFrom() - first;
      drop = Math.max(drop, Math.min(this.size - this.window, unneeded));
    }
    if (drop > 0) this.dropFront(drop);
  }

  /** Drops ids older than the duplicate window, and the oldest beyond the message ceiling. */
  private forgetIds(now: number): void {
    const window = this.definition.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
    const ceiling = this.definition.maxMsgs ?? DEFAULT_MAX_MSGS;
    let head = this.seenHead;
    const end = this.seenIds.length;
    while (head < end && (now - this.seenAt[head]! >= window || end - head >= ceiling)) this.seen.delete(this.seenIds[head++]!);
    if (head === this.seenHead) return;
    this.seenHead = head;
    if (head >= 1024 && head * 2 >= end) {
      this.seenIds = this.seenIds.slice(head);
      this.seenAt = this.seenAt.slice(head);
      this.seenHead = 0;
    }
  }

  private dropFront(count: number): void {
    for (let i = this.head; i < this.head + count; i++) this.messages[i] = undefined as unknown as StoredMessage;
    this.head += count;
    if (this.head >= 1024 && this.head * 2 >= this.messages.length) {
      this.messages = this.messages.slice(this.head);
      this.head = 0;
    }
  }

  private expire(): void {
    const maxAge = this.definition.maxAgeMs;
    if (!maxAge) return;
    const cutoff = Date.now() - maxAge;
    let drop = 0;
    while (drop < this.size && this.messages[this.head + drop]!.timestamp.getTime() < cutoff) drop++;
    if (drop > 0) this.dropFront(drop);
  }
}

/** Server-side state of a durable consumer; it outlives the consume() calls that attach to it. */
interface DurableState {
  stream: string;
  filterSubjects: string[] | undefined;
  /** Highest sequence already handed out for the first time. */
  cursor: number;
  /** Delivered but not acked, with the number of deliveries so far and when the next one is due. */
  pending: Map<number, { deliveries: number; dueAt: number }>;
  attached: boolean;
}

/** Wakes a sleeping loop either when poked or when its timer runs out. */
class Waker {
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.resolve = resolve;
      if (Number.isFinite(ms)) this.timer = setTimeout(() => this.wake(), Math.max(ms, 0));
    });
  }

  wake(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const resolve = this.resolve;
    this.resolve = undefined;
    resolve?.();
  }
}

export interface MemoryBusOptions {
  logger: Logger;
  /**
   * Messages each stream keeps for replay (Last-Event-ID resume) once no durable consumer still
   * needs them; a stream's maxMsgs (default 100,000) stays the ceiling. Unset: up to maxMsgs.
   */
  replayWindow?: number;
}

export function createMemoryBus(opts: MemoryBusOptions): EventBus {
  const logger = opts.logger.child({ component: "bus", bus: "memory" });
  const streams = new Map<string, MemoryStream>();
  const durables = new Map<string, DurableState>();

  /** The lowest sequence some durable consumer of the stream has not finished (acked) yet. */
  const neededFrom = (streamName: string): number => {
    let floor = Infinity;
    for (const state of durables.values()) {
      if (state.stream !== streamName) continue;
      floor = Math.min(floor, state.cursor + 1);
      for (const seq of state.pending.keys()) floor = Math.min(floor, seq);
    }
    return floor;
  };
  const running = new Set<Stoppable>();
  let closed = false;

  const streamNamed = (name: string): MemoryStream => {
    const stream = streams.get(name);
    if (!stream) throw new Error(`stream not found: ${name}`);
    return stream;
  };
  const assertOpen = (): void => {
    if (closed) throw new Error("event bus is closed");
  };

  const toBusMessage = (stream: MemoryStream, m: StoredMessage, redelivered: boolean): BusMessage => ({
    subject: m.subject,
    id: m.id,
    data: m.data,
    headers: { ...m.headers },
    seq: m.seq,
    stream: stream.definition.name,
    timestamp: m.timestamp,
    redelivered,
  });

  async function ensureStreams(defs: StreamDefinition[]): Promise<void> {
    assertOpen();
    for (const def of defs) {
      for (const [name, other] of streams) {
        if (name === def.name) continue;
        const clash = def.subjects.find((s) => other.definition.subjects.some((o) => subjectsOverlap(s, o)));
        if (clash) throw new Error(`subjects of stream ${def.name} overlap with stream ${name} (${clash})`);
      }
      const existing = streams.get(def.name);
      if (existing) existing.definition = { ...def };
      else streams.set(def.name, new MemoryStream({ ...def }, opts.replayWindow, () => neededFrom(def.name)));
    }
  }

  async function publish(subject: string, data: Uint8Array, options: PublishOptions): Promise<PublishAck> {
    assertOpen();
    assertValidSubject(subject);
    for (const stream of streams.values()) {
      if (stream.definition.subjects.some((p) => subjectMatches(p, subject))) return stream.append(subject, data, options);
    }
    // NATS answers "no responders" here; silently dropping would lose the event.
    throw new Error(`no stream captures subject ${subject}`);
  }

  async function consume(options: ConsumeOptions, handler: (m: BusMessage) => Promise<void>): Promise<Stoppable> {
    assertOpen();
    const stream = streamNamed(options.stream);
    const key = `${options.stream}\u0000${options.durable}`;
    let state = durables.get(key);
    if (!state) {
      state = {
        stream: options.stream,
        filterSubjects: options.filterSubjects,
        cursor: options.deliverFrom === "new" ? stream.lastSeq : 0,
        pending: new Map(),
        attached: false,
      };
      durables.set(key, state);
    }
    if (state.attached) {
      throw new Error(`durable ${options.durable} on ${options.stream} already has a consumer in this process`);
    }
    state.attached = true;
    state.filterSubjects = options.filterSubjects;
    const durable = state;
    const log = logger.child({ stream: options.stream, durable: options.durable });
    const retry = { ...DEFAULT_RETRY, ...options.retry };
    const waker = new Waker();
    const unlisten = stream.listen(() => waker.wake());
    let stopping = false;

    // Due redeliveries first (lowest sequence), then the next unseen matching message; else how long to sleep.
    const next = (): { seq: number; deliveries: number } | { sleepMs: number } => {
      const first = stream.firstSeq;
      const now = Date.now();
      let due: number | undefined;
      let wakeAt = Infinity;
      for (const [seq, entry] of durable.pending) {
        if (seq < first) {
          durable.pending.delete(seq); // dropped by retention: nothing left to deliver
        } else if (entry.dueAt <= now) {
          if (due === undefined || seq < due) due = seq;
        } else {
          wakeAt = Math.min(wakeAt, entry.dueAt);
        }
      }
      if (due !== undefined) return { seq: due, deliveries: durable.pending.get(due)!.deliveries };
      for (let seq = Math.max(durable.cursor + 1, first); seq <= stream.lastSeq; seq++) {
        durable.cursor = seq;
        const m = stream.get(seq);
        if (m && matchesAny(durable.filterSubjects, m.subject)) {
          durable.pending.set(seq, { deliveries: 0, dueAt: 0 });
          return { seq, deliveries: 0 };
        }
      }
      return { sleepMs: wakeAt - now };
    };

    const loop = (async () => {
      while (!stopping) {
        const step = next();
        if ("sleepMs" in step) {
          await waker.sleep(step.sleepMs);
          continue;
        }
        const entry = durable.pending.get(step.seq)!;
        const stored = stream.get(step.seq);
        if (!stored) {
          durable.pending.delete(step.seq); // aged out between the pick and now
          continue;
        }
        entry.deliveries = step.deliveries + 1;
        entry.dueAt = Infinity; // in flight
        try {
          await handler(toBusMessage(stream, stored, entry.deliveries > 1));
          durable.pending.delete(step.seq);
        } catch (err) {
          const delayMs = retryDelay(entry.deliveries, retry);
          entry.dueAt = Date.now() + delayMs;
          log.warn(
            { err, subject: stored.subject, seq: stored.seq, deliveries: entry.deliveries, delayMs },
            "handler failed; will redeliver",
          );
        }
      }
    })();

    const consumer: Stoppable = {
      async stop() {
        if (stopping) return loop;
        stopping = true;
        unlisten();
        waker.wake();
        await loop; // the message in flight finishes and is acked or scheduled again
        durable.attached = false;
        running.delete(consumer);
      },
    };
    running.add(consumer);
    return consumer;
  }

  async function subscribe(options: SubscribeOptions, handler: (m: BusMessage) => void): Promise<Stoppable> {
    assertOpen();
    const stream = streamNamed(options.stream);
    let nextSeq = options.startSeq ?? stream.lastSeq + 1;
    let stopped = false;
    let scheduled = false;
    const log = logger.child({ stream: options.stream, subscription: true });

    // Delivery runs on a later tick so a publisher never re-enters its own subscriber synchronously.
    const drain = (): void => {
      scheduled = false;
      nextSeq = Math.max(nextSeq, stream.firstSeq);
      while (!stopped && nextSeq <= stream.lastSeq) {
        const m = stream.get(nextSeq++);
        if (!m || !matchesAny(options.filterSubjects, m.subject)) continue;
        try {
          handler(toBusMessage(stream, m, false));
        } catch (err) {
          log.warn({ err, subject: m.subject, seq: m.seq }, "subscriber threw; continuing with the next message");
        }
      }
    };
    const schedule = (): void => {
      if (scheduled || stopped) return;
      scheduled = true;
      setImmediate(drain);
    };
    const unlisten = stream.listen(schedule);
    schedule();

    const subscription: Stoppable = {
      async stop() {
        stopped = true;
        unlisten();
        running.delete(subscription);
      },
    };
    running.add(subscription);
    return subscription;
  }

  async function streamInfo(name: string): Promise<StreamInfo> {
    assertOpen();
    const stream = streamNamed(name);
    return { firstSeq: stream.firstSeq, lastSeq: stream.lastSeq };
  }

  async function health(): Promise<BusHealth> {
    return closed ? { ok: false, detail: "closed" } : { ok: true };
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    await Promise.all([...running].map((r) => r.stop()));
    logger.debug("in-process bus closed");
  }

  return { kind: "memory", ensureStreams, publish, consume, subscribe, streamInfo, health, close };
}
