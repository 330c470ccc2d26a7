// A hub connection's outgoing records, coalesced: whatever one connection is sent during a turn of
// the event loop (the stream items and client calls of a fanned-out batch of events, from all of
// its streams) leaves as ONE WebSocket text frame, which the JSON hub protocol allows (records are
// delimited by 0x1E, not by frames). A thousand connections each sent two records per event would
// otherwise cost a frame and a socket write per record; this way it is one per connection and turn.
import { WebSocket } from "ws";

/** Above this many bytes waiting to be written, a paced writer waits for the socket before pulling more. */
const HIGH_WATER_BYTES = 1024 * 1024;

// Writers with records waiting, all written by one setImmediate: after every microtask of the
// current turn (each stream's pull) has queued what it had.
const waiting = new Set<HubWriter>();
let scheduled = false;

function flushAll(): void {
  scheduled = false;
  // Each flush takes its writer out of the set.
  for (const writer of waiting) writer.flush();
}

export class HubWriter {
  private queued: string[] = [];
  /** Paced writers waiting for the frame holding their record to be written. */
  private waiters: (() => void)[] = [];

  constructor(private readonly ws: WebSocket) {}

  /** Queues a record (text ending in 0x1E) for this turn's frame. */
  write(text: string): void {
    if (this.queued.length === 0) {
      waiting.add(this);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flushAll);
      }
    }
    this.queued.push(text);
  }

  /** Queues a record; when the socket is backed up, resolves once the frame holding it is written. */
  writePaced(text: string): Promise<void> | undefined {
    this.write(text);
    if (this.ws.bufferedAmount < HIGH_WATER_BYTES) return undefined;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Writes what is queued now (before a close frame, say) as one frame. */
  flush(): void {
    waiting.delete(this);
    const queued = this.queued;
    if (queued.length === 0) return;
    this.queued = [];
    const waiters = this.waiters;
    this.waiters = [];
    const release = waiters.length === 0 ? undefined : () => waiters.forEach((resolve) => resolve());
    if (this.ws.readyState !== WebSocket.OPEN) {
      release?.();
      return;
    }
    this.ws.send(queued.length === 1 ? queued[0]! : queued.join(""), release);
  }

  /** Drops what is queued (the socket is gone); paced writers go on, and find their call ended. */
  discard(): void {
    waiting.delete(this);
    this.queued = [];
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
