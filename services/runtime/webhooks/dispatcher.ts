// The delivery loop: claims due deliveries, POSTs them with bounded concurrency, and records
// each outcome (attempt log row, then delivered, rescheduled or failed). Outcomes finished close
// together share one transaction, so a fast receiver does not cost one commit per delivery.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Database } from "../database/index.js";
import { retryDelayMs, type BackoffPolicy } from "./backoff.js";
import {
  claimDue,
  msUntilNextDue,
  recordOutcomes,
  type AttemptRecord,
  type DeliveryOutcome,
  type FinishedDelivery,
  type PendingDelivery,
} from "./delivery-store.js";
import type { HttpSender } from "./http-sender.js";
import { judgeAnswer, judgeError, type Verdict } from "./judge-attempt.js";
import { webhookHeaders } from "./signing.js";
import type { WebhookEndpoint } from "./webhook-endpoints.js";
import type { WebhookTableNames } from "./webhook-tables.js";

export interface DispatcherOptions {
  db: Database;
  tables: WebhookTableNames;
  logger: Logger;
  sender: HttpSender;
  endpoints: readonly WebhookEndpoint[];
  timeoutSeconds: number;
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** Attempts in flight at once. */
  concurrency: number;
  /** How often to look for work queued by other instances when nothing is due here. */
  pollIntervalMs: number;
  userAgent: string;
}

export interface Dispatcher {
  /** Look for due work now (this instance just queued some). */
  wake(): void;
  /** Stops claiming, gives in-flight attempts a moment, hands the rest back; resolves when all is recorded. */
  stop(): Promise<void>;
}

/** How long a stopping dispatcher lets attempts in flight finish before it aborts them. */
const stopGraceMs = 1_000;
/** Lease beyond the attempt's own timeout: an attempt that outlives it is taken over by others. */
const leaseMarginMs = 30_000;

export function startDispatcher(options: DispatcherOptions): Dispatcher {
  const { db, sender, tables } = options;
  const logger = options.logger.child({ component: "webhook-dispatcher" });
  const endpoints = new Map(options.endpoints.map((e) => [e.key, e]));
  const leaseMs = options.timeoutSeconds * 1000 + leaseMarginMs;
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const recorder = createOutcomeRecorder(db, tables, logger);

  let stopping = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  // Whether due work may be waiting: a full claim, new work queued here, or a due time reached.
  let maybeDue = true;
  // Claims wait until this many slots are free, so a busy queue is claimed in batches, not one by one.
  const minClaim = Math.max(1, Math.floor(options.concurrency / 4));

  const interrupt = () => {
    woken = true;
    wakeUp?.();
  };
  const wake = () => {
    maybeDue = true;
    interrupt();
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });

  async function attempt(delivery: PendingDelivery): Promise<void> {
    const outcome = await attemptOnce(delivery).catch((err: unknown): DeliveryOutcome => {
      // A bug, not the receiver's doing: keep the delivery, try it again later.
      logger.error({ err, delivery: delivery.id }, "webhook attempt crashed");
      return { kind: "retry", delayMs: options.backoff.maxDelayMs, attempt: record(false, null, 0, "internal error") };
    });
    await recorder.record({ delivery, outcome });
  }

  async function attemptOnce(delivery: PendingDelivery): Promise<DeliveryOutcome> {
    const endpoint = endpoints.get(delivery.endpointKey);
    if (!endpoint) {
      // Queued under a configuration that had this endpoint; this one does not.
      logger.warn({ delivery: delivery.id, endpoint: delivery.endpoint }, "webhook delivery dropped: its endpoint is no longer configured");
      return { kind: "failed", attempt: record(false, null, 0, "endpoint no longer configured") };
    }
    if (shutdown.signal.aborted) return { kind: "released" };
    const timeout = AbortSignal.timeout(options.timeoutSeconds * 1000);
    const signal = AbortSignal.any([timeout, shutdown.signal]);
    const started = performance.now();
    const headers = {
      "content-type": "application/json",
      "user-agent": options.userAgent,
      ...webhookHeaders(delivery.webhookId, Math.floor(Date.now() / 1000), delivery.body, endpoint.signingKey),
    };
    let verdict: Verdict;
    let status: number | null = null;
    try {
      const answer = await sender.post(endpoint.url, headers, delivery.body, signal);
      status = answer.status;
      verdict = judgeAnswer(answer.status, answer.retryAfter, Date.now());
    } catch (err) {
      if (shutdown.signal.aborted && !timeout.aborted) return { kind: "released" };
      verdict = judgeError(timeout.aborted ? timeout.reason : err, options.timeoutSeconds);
    }
    const durationMs = Math.round(performance.now() - started);
    const log = {
      delivery: delivery.id,
      webhookId: delivery.webhookId,
      endpoint: delivery.endpoint,
      attempt: delivery.attemptNumber,
      status,
      durationMs,
    };
    if (verdict.kind === "delivered") {
      logger.debug(log, "webhook delivered");
      return { kind: "delivered", attempt: record(true, status, durationMs, null) };
    }
    const failure = record(false, status, durationMs, verdict.error);
    if (verdict.kind === "retry" && delivery.attemptNumber < options.maxAttempts) {
      const delayMs = retryDelayMs(delivery.attemptNumber, options.backoff, verdict.retryAfterMs);
      logger.info({ ...log, error: verdict.error, retryInMs: delayMs }, "webhook attempt failed; will retry");
      return { kind: "retry", attempt: failure, delayMs };
    }
    if (verdict.kind === "failed" && verdict.disableEndpoint) {
      logger.warn({ ...log, error: verdict.error }, "webhook endpoint answered 410 Gone; it is disabled and gets nothing more");
      return { kind: "failed", attempt: failure, disableEndpoint: verdict.error };
    }
    const final = verdict.kind === "retry" ? `${verdict.error}; gave up after ${delivery.attemptNumber} attempts` : verdict.error;
    logger.warn({ ...log, error: final }, "webhook delivery failed for good");
    return { kind: "failed", attempt: { ...failure, error: final } };
  }

  const loop = (async () => {
    while (!stopping) {
      try {
        woken = false;
        const free = options.concurrency - inFlight.size;
        if (maybeDue && (free >= minClaim || inFlight.size === 0)) {
          // A token per claim: an outcome can only ever apply to the lease it was attempted under.
          const claimed = await db.em().transactional((tx) => claimDue(tables, tx, free, leaseMs, randomUUID()));
          maybeDue = claimed.length === free;
          for (const delivery of claimed) {
            const running: Promise<void> = attempt(delivery).finally(() => {
              inFlight.delete(running);
              // A freed slot matters only when work is waiting for one.
              if (maybeDue) interrupt();
            });
            inFlight.add(running);
          }
          if (maybeDue) continue;
        }
        if (maybeDue) {
          await sleep(options.pollIntervalMs); // waiting for slots; a finished attempt interrupts
          continue;
        }
        const dueIn = await msUntilNextDue(tables, db.em());
        if (dueIn === 0) {
          maybeDue = true;
          continue;
        }
        // Also polls: other instances queue work this one hears nothing about.
        await sleep(Math.min(dueIn ?? Infinity, options.pollIntervalMs));
        maybeDue = true;
      } catch (err) {
        if (stopping) break;
        logger.error({ err }, "webhook dispatcher cycle failed; retrying");
        await sleep(options.pollIntervalMs);
        maybeDue = true;
      }
    }
  })();

  return {
    wake,
    async stop() {
      if (stopping) return;
      stopping = true;
      wake();
      await loop;
      const grace = setTimeout(() => shutdown.abort(new Error("shutting down")), stopGraceMs);
      await Promise.allSettled([...inFlight]);
      clearTimeout(grace);
      await recorder.flush();
    },
  };
}

function record(success: boolean, httpStatusCode: number | null, durationMs: number, error: string | null): AttemptRecord {
  return { success, httpStatusCode, durationMs, error, endedAt: new Date() };
}

/**
 * Group commit for outcomes: while one transaction writes, the outcomes finishing meanwhile
 * queue up and go together in the next. A failed write is retried; the deliveries' leases keep
 * other instances off them meanwhile.
 */
function createOutcomeRecorder(db: Database, tables: WebhookTableNames, logger: Logger) {
  let queue: { finished: FinishedDelivery; done: () => void }[] = [];
  let active = false;
  let writing: Promise<void> = Promise.resolve();

  async function writeAll(): Promise<void> {
    try {
      while (queue.length) {
        const batch = queue;
        queue = [];
        for (let failures = 0; ; failures++) {
          try {
            await db.em().transactional((tx) =>
              recordOutcomes(
                tables,
                tx,
                batch.map((b) => b.finished),
              ),
            );
            break;
          } catch (err) {
            if (failures >= 5) {
              // The leases run out and the deliveries are attempted again: at least once still holds.
              logger.error({ err, deliveries: batch.length }, "could not record webhook outcomes; their deliveries will be retried");
              break;
            }
            await new Promise((r) => setTimeout(r, 200 * 2 ** failures));
          }
        }
        for (const b of batch) b.done();
      }
    } finally {
      // Cleared in the same turn as the last empty-queue check, so a later record() starts a writer.
      active = false;
    }
  }

  return {
    record(finished: FinishedDelivery): Promise<void> {
      return new Promise<void>((done) => {
        queue.push({ finished, done });
        if (!active) {
          active = true;
          writing = writeAll();
        }
      });
    },
    flush(): Promise<void> {
      return writing;
    },
  };
}
