// Publishes committed outbox rows to the bus in creation order (a bundle's events in its order) and
// marks them published. Woken by notify() after a commit, and polling as well, so an event committed
// just before a crash goes out on the next start.
import type { EventBus } from "../bus/index.js";
import type { Database, Logger } from "../database/index.js";
import { joinBundle, splitBundle } from "./bundle.js";
import { arrayLiteral, queryOn } from "./sql.js";

export interface OutboxRelayOptions {
  db: Database;
  bus: EventBus;
  logger: Logger;
  /** Fallback scan interval when nobody calls notify() (default 1000 ms). */
  pollIntervalMs?: number;
  /** Events locked and published per transaction (default 2000; a bundle that crosses it is taken whole). */
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
  /** A bundle's event ids, comma-separated; null for a row of one event. */
  event_ids: string | null;
}

/** One event to publish: a row of one event, or one event of a bundle. */
interface PendingEvent {
  row: PendingRow;
  id: string;
  payload: Uint8Array;
}

/** Published on every bundled event whose id is not its row's: the row that carried it. */
export const OUTBOX_ROW_HEADER = "outbox-row";

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
      // The oldest unpublished rows up to `batchSize` events (a bundle counts its events). The lower
      // bound on seq changes nothing about which rows qualify; it starts the scan at the oldest
      // unpublished event. Rows marked published stay in the partial index until a vacuum, and a
      // scan from the start of the index (the planner's bitmap scan) visited each of them at
      // every batch. min() walks the index in order and marks the dead entries it passes.
      const rows = await q<PendingRow>(
        `select o."id", o."subject", o."payload", o."headers"::text as "headers",
                array_to_string(o."event_ids", ',') as "event_ids"
           from "outbox_event" o
          where o."published_at" is null
            and o."id" in (
              select w."id" from (
                select "id", coalesce(cardinality("event_ids"), 1) as "own",
                       sum(coalesce(cardinality("event_ids"), 1)) over (order by "seq") as "upto"
                  from "outbox_event"
                 where "published_at" is null
                   and "seq" >= (select min("seq") from "outbox_event" where "published_at" is null)
                 order by "seq" limit ?
              ) w
              where w."upto" - w."own" < ?)
          order by o."seq" for update of o skip locked`,
        [batchSize, batchSize],
      );
      const events = rows.flatMap(eventsOf);
      const { published, failed, error } = await publishInOrder(events);
      if (failed) {
        await q(`update "outbox_event" set "attempts" = "attempts" + 1, "last_error" = ? where "id" = ?`, [describe(error), failed.row.id]);
      }
      const { done, rest } = progress(events, published);
      if (done.length > 0) {
        await q(`update "outbox_event" set "published_at" = ? where "id" = any(?::uuid[])`, [
          new Date().toISOString(),
          arrayLiteral.uuids(done),
        ]);
      }
      // A bundle published in part keeps only the events still to go, so none goes out twice.
      for (const [id, left] of rest) {
        await q(`update "outbox_event" set "event_ids" = ?::uuid[], "payload" = ? where "id" = ?`, [
          arrayLiteral.uuids(left.map((e) => e.id)),
          Buffer.from(joinBundle(left.map((e) => e.payload))),
          id,
        ]);
      }
      return {
        published: published.size,
        more: rows.length === batchSize || events.length >= batchSize,
        error: failed ? error : undefined,
      };
    });
  }

  /**
   * Publishes the events in order. The first alone, as a probe: a bus that is down fails it and
   * nothing else is sent. Then up to `publishWindow` at a time, their acks awaited together
   * (a JetStream publish is a round trip each; sent back to back, the stream stores them in
   * order). Stops after the first window with a failure; every event that did reach the bus is
   * marked, so none is sent twice. Only a failure in the middle of a window (one event refused
   * while later ones are stored) lets those later ones overtake it.
   */
  async function publishInOrder(events: PendingEvent[]): Promise<{ published: Set<PendingEvent>; failed?: PendingEvent; error?: unknown }> {
    const published = new Set<PendingEvent>();
    // Rows of a batch mostly share their headers (same event type, same request): each distinct
    // text is parsed once, and every publish gets its own copy.
    const parsed = new Map<string, Record<string, string>>();
    const headersOf = (event: PendingEvent): Record<string, string> => {
      const raw = event.row.headers;
      let headers: Record<string, string>;
      if (typeof raw !== "string") headers = toHeaders(raw);
      else {
        let shared = parsed.get(raw);
        if (!shared) parsed.set(raw, (shared = toHeaders(raw)));
        headers = { ...shared };
      }
      if (event.id !== event.row.id) headers[OUTBOX_ROW_HEADER] = event.row.id;
      return headers;
    };
    const publish = (event: PendingEvent) => bus.publish(event.row.subject, event.payload, { id: event.id, headers: headersOf(event) });
    for (let start = 0; start < events.length; ) {
      const size = start === 0 ? 1 : publishWindow;
      const window = events.slice(start, start + size);
      start += window.length;
      const outcomes = await Promise.allSettled(window.map(publish));
      let failed: PendingEvent | undefined;
      let error: unknown;
      outcomes.forEach((outcome, i) => {
        if (outcome.status === "fulfilled") published.add(window[i]!);
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

/** A row's events: itself, or its bundle's. */
function eventsOf(row: PendingRow): PendingEvent[] {
  const payload = toBytes(row.payload);
  if (row.event_ids === null) return [{ row, id: row.id, payload }];
  const ids = row.event_ids.split(",");
  return splitBundle(payload, ids.length).map((message, i) => ({ row, id: ids[i]!, payload: message }));
}

/** Rows whose every event is now published, and the events left of bundles published in part. */
function progress(
  events: readonly PendingEvent[],
  published: ReadonlySet<PendingEvent>,
): { done: string[]; rest: Map<string, PendingEvent[]> } {
  const done: string[] = [];
  const rest = new Map<string, PendingEvent[]>();
  for (let i = 0; i < events.length; ) {
    const row = events[i]!.row;
    const left: PendingEvent[] = [];
    let size = 0;
    for (; i < events.length && events[i]!.row === row; i++, size++) if (!published.has(events[i]!)) left.push(events[i]!);
    if (left.length === 0) done.push(row.id);
    else if (left.length < size) rest.set(row.id, left);
  }
  return { done, rest };
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
