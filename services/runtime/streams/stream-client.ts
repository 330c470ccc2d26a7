// One live-stream client's side of the hub: a bounded buffer between the bus (which never waits)
// and the client (which reads at its own pace). When the client falls behind, the oldest events
// are dropped and the next thing it reads is a `dropped` event with their number.
import type { ServerSentEvent } from "../../../gen/meshwork/api/v1/sse_pb.js";

/** An event as the hub hands it out: one shared frame, and its bus sequence for ordering. */
export interface SequencedEvent {
  readonly seq: number;
  readonly frame: ServerSentEvent;
}

const settled = Promise.resolve();

export class StreamClient {
  /** Frames to send, and gaps (a number: events missed at that point) where the hub dropped some. */
  private readonly buffer: (ServerSentEvent | number)[] = [];
  /** Events dropped before the oldest buffered one. */
  private dropped = 0;
  private waiter: (() => void) | undefined;
  private closed = false;
  /** Highest bus sequence taken in; anything at or below it is already on its way. */
  lastSeq = 0;
  /**
   * While a resuming client replays history, live events wait here (newest `capacity` of them),
   * so the hand-over to live delivery neither loses nor repeats one.
   */
  held: SequencedEvent[] | undefined;
  /** Live events that did not fit in `held`: the replay must then go on up to the oldest kept. */
  heldOverflowed = false;
  /**
   * A run of live events kept as the hub's own array while nothing else is buffered: every client
   * that keeps up then hands on the very same frames (and batch), so the gateway encodes and
   * writes them once for all. Anything else that arrives first copies it into `buffer`.
   */
  private shared: readonly ServerSentEvent[] | undefined;

  constructor(
    readonly capacity: number,
    /** The module's `dropped` frame for a gap of this many events (frozen: it may be shared). */
    private readonly droppedEvent: (count: number) => ServerSentEvent,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /** A live event from the hub. */
  offer(event: SequencedEvent): void {
    if (this.closed) return;
    if (this.held) {
      if (this.held.length >= this.capacity) {
        this.held.shift();
        this.heldOverflowed = true;
      }
      this.held.push(event);
      return;
    }
    this.accept(event.seq, event.frame);
  }

  /**
   * Live events the hub hands to every client at once, in sequence order; `frames` is theirs, in
   * the same order, frozen and shared by every client.
   */
  offerRun(run: readonly SequencedEvent[], frames: readonly ServerSentEvent[]): void {
    const first = run[0];
    if (first === undefined) return;
    if (
      !this.closed &&
      !this.held &&
      this.shared === undefined &&
      this.buffer.length === 0 &&
      this.dropped === 0 &&
      first.seq > this.lastSeq
    ) {
      this.shared = frames;
      this.lastSeq = run[run.length - 1]!.seq;
      this.wake();
      return;
    }
    for (const event of run) this.offer(event);
  }

  /** An event in sequence order (live or replayed); one already taken in is ignored. */
  accept(seq: number, frame: ServerSentEvent | undefined): void {
    if (this.closed || seq <= this.lastSeq) return;
    this.lastSeq = seq;
    if (frame) this.push(frame);
  }

  /**
   * Events missed at this point of the sequence without being seen: a resume older than the
   * retained history, or events the hub itself had to drop.
   */
  noteDropped(count: number): void {
    if (this.closed || count <= 0) return;
    // After a shared run, not before it: the run becomes this client's own buffer first.
    this.unshare();
    if (this.buffer.length > 0) {
      this.push(count);
      return;
    }
    this.dropped += count;
    this.wake();
  }

  /** Live events the hub could not deliver: a replaying client reads them from the bus instead. */
  missedLive(count: number): void {
    if (this.held) this.heldOverflowed = true;
    else this.noteDropped(count);
  }

  /** Ends the replay: held live events after the replayed ones are delivered, then live ones. */
  goLive(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldOverflowed = false;
    for (const event of held) this.accept(event.seq, event.frame);
  }

  hasBuffered(): boolean {
    return this.shared !== undefined || this.buffer.length > 0 || this.dropped > 0;
  }

  /**
   * Every frame ready, in order, once there is at least one; undefined when the client is closed.
   * Readiness is signalled, not handed over: frames that arrive in the same turn as the first one
   * leave together. A shared run comes back as the hub's own (frozen) array.
   */
  async nextBatch(): Promise<readonly ServerSentEvent[] | undefined> {
    while (!this.hasBuffered()) {
      if (this.closed) return undefined;
      await this.ready();
    }
    return this.take();
  }

  /**
   * Settles once there is something to take (or the client closed); take() then. The two halves
   * of nextBatch, for a reader that wants to spend no promise of its own per batch.
   */
  ready(): Promise<void> {
    if (this.closed || this.hasBuffered()) return settled;
    return new Promise<void>((resolve) => (this.waiter = resolve));
  }

  /** What is buffered now (nothing when none), or undefined once the client is closed. */
  take(): readonly ServerSentEvent[] | undefined {
    return this.closed ? undefined : this.takeAll();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.length = 0;
    this.dropped = 0;
    this.held = undefined;
    this.shared = undefined;
    this.wake();
  }

  /** From here on the shared run is this client's own buffer. */
  private unshare(): void {
    if (this.shared === undefined) return;
    this.buffer.push(...this.shared);
    this.shared = undefined;
  }

  private push(entry: ServerSentEvent | number): void {
    this.unshare();
    const last = this.buffer.at(-1);
    if (typeof entry === "number" && typeof last === "number") {
      this.buffer[this.buffer.length - 1] = last + entry;
    } else {
      if (this.buffer.length >= this.capacity) {
        const oldest = this.buffer.shift()!;
        this.dropped += typeof oldest === "number" ? oldest : 1;
      }
      this.buffer.push(entry);
    }
    this.wake();
  }

  private takeAll(): readonly ServerSentEvent[] {
    const shared = this.shared;
    this.shared = undefined;
    // Only a shared run is buffered (anything more copies it first): hand it on as it is.
    if (shared !== undefined && this.buffer.length === 0 && this.dropped === 0) return shared;
    if (shared !== undefined) this.buffer.unshift(...shared);
    const out: ServerSentEvent[] = [];
    // The gap sits right before the oldest entry still buffered: say so there.
    if (this.dropped > 0) out.push(this.droppedEvent(this.dropped));
    this.dropped = 0;
    for (const entry of this.buffer) out.push(typeof entry === "number" ? this.droppedEvent(entry) : entry);
    this.buffer.length = 0;
    return out;
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
