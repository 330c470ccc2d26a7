// Publishes committed outbox rows to the bus in creation order and marks them published. Woken by notify()
// after a commit, and polling as well, so an event committed just before a crash goes out on the next start.
import type { EventBus } from "../bus/index.js";
import type { Database, Logger } from "../database/index.js";
import { arrayLiteral, queryOn } from "./sql.js";

export interface OutboxRelayOptions {
  db: Database;
  bus: EventBus;
  logger: Logger;
  /** Fallback scan interval when nobody calls notify() (default 1000 ms). */
  pollIntervalMs?: number;
  /** Rows locked and published per transaction (default 2000). */
  batchSize?: number;
  /** Publishes whose acks are awaited together, after the first of a batch (default 500). */
  publishWindow?: number;
  /**
   * Least time between the starts of two cycles asked for by notify() (default 25 ms). A lone
   * commit is relayed at once; under a stream of small commits (single records), their events
   * wait at most this long and go out in one relay transaction instead of one each.
   */
  coalesceMs?: number;
  /** Backoff after a failed publish: starts here and doubles (default 500 ms) ... */
  retryInitialDelayMs?: number;
  /** ... up to this (default 30 s). */
  retryMaxDelayMs?: number;
}

export interface OutboxRelay {
  /** Relay now; call after committing a transaction that recorded events. */
  notify(): void;
  /** Publish everything pending now and resolve when done; rejects if the bus refuses an event. */
  drain(): Promise<void>;
  /** Stop after the batch in flight; pending rows stay for the next start. */
  stop(): Promise<void>;
}

interface PendingRow {
  id: string;
  subject: string;
  payload: Uint8Array;
  headers: Record<string, string> | string | null;
}

interface BatchResult {
  published: number;
  /** The batch was full, so more rows may be waiting. */
  more: boolean;
  error?: unknown;
}

export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { db, bus } = options;
  const logger = options.logger.child({ component: "outbox-relay" });
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const batchSize = options.batchSize ?? 2_000;
  const publishWindow = Math.max(1, options.publishWindow ?? 500);
  const coalesceMs = options.coalesceMs ?? 25;
  const retryInitial = options.retryInitialDelayMs ?? 500;
  const retryMax = options.retryMaxDelayMs ?? 30_000;

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let backingOff = false;
  // Cycles, drains and stop run one after another: two overlapping batches of one relay would race each
  // other past SKIP LOCKED and publish out of order.
  let chain: Promise<unknown> = Promise.resolve();
  let cycleQueued = false;
  let lastCycleStart = Number.NEGATIVE_INFINITY;
  let coalesceTimer: NodeJS.Timeout | undefined;

  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const run = chain.then(work, work);
    chain = run.catch(() => undefined);
    return run;
  };

  // One transaction per batch: the row locks keep other relays off these rows until they are marked.
  async function relayBatch(): Promise<BatchResult> {
    return db.em().transactional(async (em) => {
      const q = queryOn(em);
      const rows = await q<PendingRow>(
        // The lower bound changes nothing about which rows qualify; it starts the scan at the oldest
        // unpublished event. Rows marked published stay in the partial index until a vacuum, and a
        // scan from the start of the index (the planner's bitmap scan) visited each of them at
        // every batch. min() walks the index in order and marks the dead entries it passes.
        `select "id", "subject", "payload", "headers"::text as "headers" from "outbox_event"
         where "published_at" is null
           and "seq" >= (select min("seq") from "outbox_event" where "published_at" is null)
         order by "seq" limit ? for update skip locked`,
        [batchSize],
      );
      const { published, failed, error } = await publishInOrder(rows);
      if (failed) {
        await q(`update "outbox_event" set "attempts" = "attempts" + 1, "last_error" = ? where "id" = ?`, [describe(error), failed.id]);
      }
      if (published.length > 0) {
        await q(`update "outbox_event" set "published_at" = ? where "id" = any(?::uuid[])`, [
          new Date().toISOString(),
          arrayLiteral.uuids(published),
        ]);
      }
      return { published: published.length, more: rows.length === batchSize, error: failed ? error : undefined };
    });
  }

  /**
   * Publishes the rows in order. The first alone, as a probe: a bus that is down fails it and
   * nothing else is sent. Then up to `publishWindow` at a time, their acks awaited together
   * (a JetStream publish is a round trip each; sent back to back, the stream stores them in
   * order). Stops after the first window with a failure; every event that did reach the bus is
   * marked, so none is sent twice. Only a failure in the middle of a window (one event refused
   * while later ones are stored) lets those later ones overtake it.
   */
  async function publishInOrder(rows: PendingRow[]): Promise<{ published: string[]; failed?: PendingRow; error?: unknown }> {
    const published: string[] = [];
    // Rows of a batch mostly share their headers (same event type, same request): each distinct
    // text is parsed once, and every publish gets its own copy.
    const parsed = new Map<string, Record<string, string>>();
    const headersOf = (raw: PendingRow["headers"]): Record<string, string> => {
      if (typeof raw !== "string") return toHeaders(raw);
      let headers = parsed.get(raw);
      if (!headers) parsed.set(raw, (headers = toHeaders(raw)));
      return { ...headers };
    };
    const publish = (row: PendingRow) => bus.publish(row.subject, toBytes(row.payload), { id: row.id, headers: headersOf(row.headers) });
    for (let start = 0; start < rows.length; ) {
      const size = start === 0 ? 1 : publishWindow;
      const window = rows.slice(start, start + size);
      start += window.length;
      const outcomes = await Promise.allSettled(window.map(publish));
      let failed: PendingRow | undefined;
      let error: unknown;
      outcomes.forEach((outcome, i) => {
        if (outcome.status === "fulfilled") published.push(window[i]!.id);
        else if (!failed) {
          failed = window[i];
          error = outcome.reason;
        }
      });
      if (failed) return { published, failed, error };
    }
    return { published };
  }

  function schedule(delayMs: number): void {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(kick, delayMs);
    // Polling alone should not keep a process alive; whatever owns the relay decides its lifetime.
    timer.unref();
  }

  async function cycle(): Promise<void> {
    cycleQueued = false;
    if (stopped) return;
    lastCycleStart = Date.now();
    let total = 0;
    try {
      for (;;) {
        const result = await relayBatch();
        total += result.published;
        if (result.error !== undefined) throw result.error;
        if (!result.more) break;
        if (stopped) return;
      }
      if (failures > 0) logger.info({ failures }, "outbox relay recovered");
      failures = 0;
      backingOff = false;
      if (total > 0) logger.debug({ published: total }, "outbox events published");
      schedule(pollIntervalMs);
    } catch (err) {
      failures++;
      backingOff = true;
      const delayMs = Math.min(retryInitial * 2 ** Math.min(failures - 1, 30), retryMax);
      const log = failures >= 5 ? logger.error.bind(logger) : logger.warn.bind(logger);
      log({ err, failures, delayMs, published: total }, "outbox relay failed; retrying");
      schedule(delayMs);
    }
  }

  function kick(): void {
    if (stopped || cycleQueued) return;
    cycleQueued = true;
    const wait = lastCycleStart + coalesceMs - Date.now();
    if (wait > 0) coalesceTimer = setTimeout(() => void exclusive(cycle), wait);
    else void exclusive(cycle);
  }

  async function drain(): Promise<void> {
    await exclusive(async () => {
      for (;;) {
        const result = await relayBatch();
        if (result.error !== undefined) throw result.error;
        if (!result.more) break;
      }
      failures = 0;
      backingOff = false;
    });
  }

  kick(); // whatever a previous run left unpublished goes out first

  return {
    notify() {
      // During backoff the bus is known to be failing; the retry timer will try again.
      if (!backingOff) kick();
    },
    drain,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(coalesceTimer);
      await chain;
    },
  };
}

// pg returns bytea as a Buffer; copy into a plain Uint8Array view of exactly the payload.
function toBytes(payload: Uint8Array): Uint8Array {
  return new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
}

function toHeaders(raw: PendingRow["headers"]): Record<string, string> {
  if (!raw) return {};
  const parsed: unknown = typeof raw === "string" ? JSON.parse(raw) : raw;
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) headers[key] = String(value);
  return headers;
}

function describe(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 2_000);
}
