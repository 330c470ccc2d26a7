// The dispatcher's audit sink: entries are queued on the call path (never awaited there) and
// written in batches, one transaction (and one statement, where the log can) each, by a timer; `close` writes what is left (at shutdown).
// The caller's key Name and the active trace are taken when the entry is queued.
import { isSpanContextValid, trace } from "@opentelemetry/api";
import { currentIdentity } from "../../../runtime/auth/identity.js";
import type { LoggerLike } from "../../../runtime/logging/index.js";
import type { UnitOfWork } from "../../../runtime/outbox/index.js";
import type { AuditEntry, AuditLog } from "../../audit/types.js";

export interface AuditBuffer {
  push(entry: AuditEntry): void;
  /** Writes what is queued now. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

export function auditBuffer(options: {
  uow: UnitOfWork;
  log: AuditLog;
  logger: Pick<LoggerLike, "error">;
  intervalMs?: number;
  maxBatch?: number;
}): AuditBuffer {
  const maxBatch = options.maxBatch ?? 500;
  let queue: AuditEntry[] = [];
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const write = async () => {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        await options.uow.run(async (tx) => {
          if (options.log.recordMany) await options.log.recordMany(tx.em, batch);
          else for (const entry of batch) await options.log.record(tx.em, entry);
        });
      } catch (error) {
        options.logger.error({ error: (error as Error).message, entries: batch.length }, "could not write tool audit entries");
      }
    }
  };
  const flush = () => {
    writing = writing.then(write);
    return writing;
  };
  const schedule = () => {
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, options.intervalMs ?? 50);
    timer.unref?.();
  };

  return {
    push(entry) {
      const user = entry.userId ?? currentIdentity().name;
      const span = trace.getActiveSpan()?.spanContext();
      const traceId = entry.traceId ?? (span && isSpanContextValid(span) ? span.traceId : undefined);
      queue.push({ ...entry, ...(user ? { userId: user } : {}), ...(traceId ? { traceId } : {}) });
      if (queue.length >= maxBatch) void flush();
      else schedule();
    },
    flush,
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await flush();
    },
  };
}
