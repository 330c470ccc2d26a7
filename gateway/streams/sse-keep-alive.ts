// Keep-alive comments for open event streams: one timer per front, not one per client. A stream
// that wrote nothing during the last interval gets a comment, so proxies and clients that close
// idle connections keep it open.
import type { ServerResponse } from "node:http";
import { KEEP_ALIVE_FRAME } from "./sse-framer.js";

export interface KeepAliveEntry {
  /** Something was written: no keep-alive is due this interval. */
  touch(): void;
  remove(): void;
}

export interface KeepAlive {
  add(res: ServerResponse): KeepAliveEntry;
}

interface Tracked {
  readonly res: ServerResponse;
  quiet: boolean;
}

export function createKeepAlive(intervalMs: number): KeepAlive {
  const open = new Set<Tracked>();
  let timer: NodeJS.Timeout | undefined;

  const tick = (): void => {
    for (const entry of open) {
      const { res } = entry;
      // A client that is not reading needs no keep-alive; its buffer is full already.
      if (entry.quiet && !res.destroyed && !res.writableNeedDrain) res.write(KEEP_ALIVE_FRAME);
      entry.quiet = true;
    }
  };

  return {
    add(res) {
      const entry: Tracked = { res, quiet: true };
      open.add(entry);
      if (timer === undefined) {
        timer = setInterval(tick, intervalMs);
        // Open streams keep the server alive already; the timer alone should not.
        timer.unref();
      }
      return {
        touch() {
          entry.quiet = false;
        },
        remove() {
          open.delete(entry);
          if (open.size === 0 && timer !== undefined) {
            clearInterval(timer);
            timer = undefined;
          }
        },
      };
    },
  };
}
