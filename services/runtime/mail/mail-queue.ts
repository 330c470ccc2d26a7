// A module's durable mail: messages are queued in its own PostgreSQL table inside the caller's
// transaction (so a mail exists exactly when the change that causes it commits, and a request never
// waits for SMTP), then a worker sends them, deletes what was sent and retries failures with
// backoff up to a bound. Several instances share the table; each message is claimed by one.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { ConnectionOptions } from "node:tls";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Logger } from "pino";
import type { Database } from "../database/index.js";
import { backoffDelayMs, type BackoffPolicy } from "../webhooks/backoff.js";
import { describeSendError, fileSender, longestAttemptMs, smtpSender, type MailSender } from "./mail-sender.js";
import type { SmtpSettings } from "./mail-settings.js";
import { claimDueMail, deleteSent, mailDepth, msUntilNextMail, recordFailure, releaseMail, type ClaimedMail } from "./mail-store.js";
import type { MailTables } from "./mail-tables.js";

export interface MailMessage {
  /** One address (`someone@example.org` or `Name <someone@example.org>`). */
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface MailQueueOptions {
  tables: MailTables;
  db: Database;
  logger: Logger;
  settings: SmtpSettings;
  /** Where its settings live, for messages (e.g. `Orders:Smtp`). */
  settingsSection: string;
  /** Data:Dir: without an SMTP URL, messages are written to `<dataDir>/mail/`. */
  dataDir: string;
  /** Attempts before a message is marked failed (default 8). */
  maxAttempts?: number;
  /** Between attempts (default 2 s doubling to 10 min, with full jitter). */
  backoff?: BackoffPolicy;
  /** How often an idle worker looks for mail queued by other instances (default 1 s). */
  pollIntervalMs?: number;
  /** Extra TLS options for the relay (e.g. `ca` for a private certificate authority). */
  tls?: ConnectionOptions;
}

export interface MailQueue {
  /** "smtp://relay:587" (password redacted) or the .eml directory. */
  readonly target: string;
  /**
   * Queues `message` with the entity manager's unit of work: it is written at the next flush, so
   * inside `em.transactional` (or a UnitOfWork's `tx.em`) it commits or rolls back with the change.
   * Answers the message id. The worker is woken once a transaction commits after this.
   */
  enqueue(em: EntityManager, message: MailMessage): string;
  /** Starts the worker. */
  start(): void;
  /** Stops claiming, lets the messages being sent finish, hands back the rest. */
  stop(): Promise<void>;
  /** Look for due mail now. */
  wake(): void;
  depth(): Promise<{ pending: number; failed: number }>;
}

/** A message refused before it was queued (a caller's bug, not a delivery failure). */
export class MailMessageError extends Error {
  override name = "MailMessageError";
}

/** Messages sent at once per instance. */
const concurrency = 4;

export function createMailQueue(options: MailQueueOptions): MailQueue {
  const { db, tables, settings } = options;
  const logger = options.logger.child({ component: "mail" });
  const maxAttempts = options.maxAttempts ?? 8;
  const backoff = options.backoff ?? { initialDelayMs: 2_000, maxDelayMs: 10 * 60_000 };
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const password = settings.url ? decodeURIComponent(new URL(settings.url).password) || undefined : undefined;
  const sender: MailSender = settings.url
    ? smtpSender(settings.url, { requireTls: settings.requireTls, ...(options.tls ? { tls: options.tls } : {}) })
    : fileSender(join(options.dataDir, "mail"));

  // The entity managers that queued a message whose transaction has not committed yet.
  const queuedBy = new WeakSet<object>();
  let running = false;
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  const inFlight = new Set<Promise<void>>();

  // Every transaction of this database runs on a fork whose event manager is cloned from this one,
  // so the subscriber hears each commit: the one that made a queued message visible (the commit of
  // the entity manager the message was queued on, as `em.transactional` or its flush reports it)
  // wakes the worker. Any other commit, the worker's own claims included, wakes nothing: a wake
  // before the message is visible would find nothing and sleep until the next poll.
  db.orm.em.getEventManager().registerSubscriber({
    afterTransactionCommit(args) {
      if (!args.em || !queuedBy.has(args.em)) return;
      queuedBy.delete(args.em);
      if (running) wake();
    },
  });

  function wake(): void {
    woken = true;
    wakeUp?.();
  }

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

  async function attempt(mail: ClaimedMail): Promise<void> {
    const log = { mail: mail.id, to: mail.recipient, attempt: mail.attemptNumber };
    if (stopping) {
      await db.em().transactional((em) => releaseMail(tables.queue, em, mail));
      return;
    }
    try {
      await sender.send({
        id: mail.id,
        from: settings.from,
        to: mail.recipient,
        subject: mail.subject,
        text: mail.textBody,
        html: mail.htmlBody,
        createdAt: mail.createdAt,
      });
    } catch (err) {
      const failure = describeSendError(err, password);
      const retry = !failure.permanent && mail.attemptNumber < maxAttempts;
      const delayMs = retry ? backoffDelayMs(mail.attemptNumber, backoff) : undefined;
      await db.em().transactional((em) => recordFailure(tables.queue, em, mail, failure.error, delayMs));
      if (retry) {
        logger.info({ ...log, error: failure.error, retryInMs: delayMs }, "mail not sent; will retry");
        // The loop may have measured the queue while this message was out (and seen nothing due):
        // it looks again, so the retry goes out at its time rather than at the next poll.
        wake();
      } else
        logger.warn(
          { ...log, error: failure.error },
          failure.permanent
            ? "mail refused for good by the server; marked failed"
            : `mail not sent after ${mail.attemptNumber} attempts; marked failed`,
        );
      return;
    }
    await db.em().transactional((em) => deleteSent(tables.queue, em, mail));
    logger.debug(log, "mail sent");
  }

  async function run(): Promise<void> {
    let maybeDue = true;
    while (!stopping) {
      try {
        woken = false;
        const free = concurrency - inFlight.size;
        if (maybeDue && free > 0) {
          const claimed = await db.em().transactional((em) => claimDueMail(tables.queue, em, free, longestAttemptMs, randomUUID()));
          maybeDue = claimed.length === free;
          for (const mail of claimed) {
            const task: Promise<void> = attempt(mail)
              .catch((err: unknown) => logger.error({ err: describeSendError(err, password).error, mail: mail.id }, "mail attempt crashed"))
              .finally(() => {
                inFlight.delete(task);
                if (maybeDue) wake();
              });
            inFlight.add(task);
          }
          if (maybeDue) continue;
        }
        if (maybeDue) {
          await sleep(pollIntervalMs); // every slot busy; a finished attempt wakes the loop
          continue;
        }
        const dueIn = await msUntilNextMail(tables.queue, db.em());
        if (dueIn === 0) {
          maybeDue = true;
          continue;
        }
        // Also polls: other instances queue mail this one hears nothing about.
        await sleep(Math.min(dueIn ?? Number.POSITIVE_INFINITY, pollIntervalMs));
        maybeDue = true;
      } catch (err) {
        if (stopping) break;
        logger.error({ err }, "mail worker cycle failed; retrying");
        await sleep(pollIntervalMs);
        maybeDue = true;
      }
    }
  }

  return {
    target: sender.target,
    enqueue(em, message) {
      const row = checkedMessage(message);
      const id = randomUUID();
      const now = new Date();
      em.persist(
        em.create(tables.entity, {
          id,
          ...row,
          status: "pending",
          attemptCount: 0,
          nextAttemptAt: now,
          leaseToken: null,
          lastError: null,
          createdAt: now,
          updatedAt: now,
        }),
      );
      queuedBy.add(em);
      return id;
    },
    start() {
      if (running) return;
      running = true;
      stopping = false;
      loop = run();
      logger.info(
        { target: sender.target, settings: options.settingsSection },
        settings.url ? "mail goes out over SMTP" : "mail is written to files (no SMTP URL set)",
      );
    },
    async stop() {
      if (!running) return;
      stopping = true;
      wake();
      await loop;
      await Promise.allSettled([...inFlight]);
      running = false;
      sender.close();
    },
    wake,
    depth: () => mailDepth(tables.queue, db.em()),
  };
}

const lineBreak = /[\r\n]/;

function checkedMessage(message: MailMessage): { recipient: string; subject: string; textBody: string; htmlBody: string | null } {
  const to = message.to?.trim() ?? "";
  // Header values: a line break would let text become headers of its own.
  if (!/^[^\s@<>]+@[^\s@<>]+$|^[^<>\r\n]*<[^\s@<>]+@[^\s@<>]+>$/.test(to)) throw new MailMessageError("a mail needs one recipient address");
  if (lineBreak.test(message.subject)) throw new MailMessageError("a mail subject is one line");
  if (message.subject.trim() === "") throw new MailMessageError("a mail needs a subject");
  if (message.text === "") throw new MailMessageError("a mail needs a text part");
  return { recipient: to, subject: message.subject, textBody: message.text, htmlBody: message.html ?? null };
}
