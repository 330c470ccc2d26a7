// The unit of work: a change and the events it causes commit together in one transaction, and
// the outbox relay is woken once the commit is done, so an event is published promptly, never
// for a change that rolled back.
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { OutboxEvent } from "./outbox-event.js";
import { outboxInserts, outboxRows, type OutboxEventInput, type OutboxInsert } from "./outbox-rows.js";

export interface RecordOptions {
  /** The event id (a UUID); generated when absent. */
  id?: string;
  headers?: Record<string, string>;
}

/** What the work of a unit of work is given. */
export interface Transaction {
  /** The transaction's entity manager: every read and write of the work goes through it. */
  readonly em: EntityManager;
  /**
   * Records an event on the subject its message declares; it is written with the change's rows
   * (at the next flush) and published after the commit. Answers the event id, which is also put
   * in the message's unset event_id (and the time in its unset occurred_at).
   */
  record<Desc extends DescMessage>(schema: Desc, message: MessageInitShape<Desc>, options?: RecordOptions): string;
  /**
   * Events as multi-row inserts, for a statement that writes its events itself to save a round
   * trip (the ingest fast path). The caller runs them in this transaction, in order, after
   * anything the entity manager still holds is flushed.
   */
  outboxInserts(events: readonly OutboxEventInput[], now?: Date): OutboxInsert[];
}

export interface UnitOfWork {
  /**
   * Runs `work` in a transaction. On commit, wakes the relay once if the work recorded events;
   * when `work` throws, everything it wrote (its events included) rolls back and the error is rethrown.
   */
  run<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * A change and its events written by one statement on its own (autocommitted: no begin and
   * commit round trips): `build` is given `outboxInserts` and answers the statement (`?`
   * placeholders), typically `with w0 as (<change>), w1 as (<outbox insert>) select 1`. The relay
   * is woken once after it when it wrote events.
   */
  statement(build: (events: Pick<Transaction, "outboxInserts">) => { sql: string; bindings: readonly unknown[] }): Promise<void>;
}

export interface UnitOfWorkDeps {
  db: { em(): EntityManager };
  /** The outbox relay, or anything that wakes it. */
  outbox: { notify(): void };
}

export function createUnitOfWork(deps: UnitOfWorkDeps): UnitOfWork {
  return {
    async run(work) {
      let recorded = false;
      const result = await deps.db.em().transactional((em) => {
        const tx = transactionOn(em);
        return work({
          em,
          record(schema, message, options) {
            recorded = true;
            return tx.record(schema, message, options);
          },
          outboxInserts(events, now) {
            if (events.length) recorded = true;
            return tx.outboxInserts(events, now);
          },
        });
      });
      if (recorded) deps.outbox.notify();
      return result;
    },
    async statement(build) {
      let recorded = false;
      const { sql, bindings } = build({
        outboxInserts(events, now = new Date()) {
          if (events.length) recorded = true;
          return outboxInserts(outboxRows(events, now), now);
        },
      });
      await deps.db
        .em()
        .getConnection()
        .execute(sql, [...bindings]);
      if (recorded) deps.outbox.notify();
    },
  };
}

/**
 * A Transaction over an entity manager whose transaction the caller owns (and whose relay it
 * wakes itself). For code not yet moved to UnitOfWork.run.
 */
export function transactionOn(em: EntityManager): Transaction {
  return {
    em,
    record(schema, message, options = {}) {
      const [row] = outboxRows([{ schema, message, ...options } as OutboxEventInput]);
      em.persist(em.create(OutboxEvent, { ...row!, createdAt: new Date() }));
      return row!.id;
    },
    outboxInserts(events, now = new Date()) {
      return outboxInserts(outboxRows(events, now), now);
    },
  };
}
