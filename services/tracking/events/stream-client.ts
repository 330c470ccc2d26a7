// One event-stream client's side of the hub: a bounded buffer between the bus (which never waits)
// and the client (which reads at its own pace). When the client falls behind, the oldest events
// are dropped and the next thing it reads is a `dropped` event with their number.
import type { ServerSentEvent } from "../../../gen/meshwork/api/v1/sse_pb.js";
import { droppedEvent } from "./stream-mapping.js";

/** An event as the hub hands it out: one shared frame, and its bus sequence for ordering. */
export interface SequencedEvent {
  readonly seq: number;
  readonly frame: ServerSentEvent;
}

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

  constructor(readonly capacity: number) {}

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
    return this.buffer.length > 0 || this.dropped > 0;
  }

  /**
   * Every frame ready, in order, once there is at least one; undefined when the client is closed.
   * Readiness is signalled, not handed over: frames that arrive in the same turn as the first one
   * leave together.
   */
  async nextBatch(): Promise<ServerSentEvent[] | undefined> {
    while (!this.hasBuffered()) {
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    return this.closed ? undefined : this.takeAll();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.length = 0;
    this.dropped = 0;
    this.held = undefined;
    this.wake();
  }

  private push(entry: ServerSentEvent | number): void {
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

  private takeAll(): ServerSentEvent[] {
    const out: ServerSentEvent[] = [];
    // The gap sits right before the oldest entry still buffered: say so there.
    if (this.dropped > 0) out.push(droppedEvent(this.dropped));
    this.dropped = 0;
    for (const entry of this.buffer) out.push(typeof entry === "number" ? droppedEvent(entry) : entry);
    this.buffer.length = 0;
    return out;
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
