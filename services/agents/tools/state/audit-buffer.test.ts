// The dispatcher's audit buffer: push never waits, entries are written in batches of one
// transaction each, a failed batch is logged (not thrown at the caller), and close writes the rest.
import test from "ava";
import type { UnitOfWork } from "../../../runtime/outbox/index.js";
import { until } from "../../../../test/support/until.js";
import type { AuditEntry } from "../../audit/types.js";
import { auditBuffer } from "./audit-buffer.js";

function recorder(failFirst = false) {
  const batches: AuditEntry[][] = [];
  let failing = failFirst;
  const uow = {
    async run(work: (tx: never) => Promise<unknown>) {
      const batch: AuditEntry[] = [];
      batches.push(batch);
      await work({ em: batch } as never);
      if (failing) {
        failing = false;
        throw new Error("database down");
      }
    },
  } as unknown as UnitOfWork;
  const log = {
    async record(em: unknown, entry: AuditEntry) {
      (em as AuditEntry[]).push(entry);
    },
  };
  return { uow, log, batches };
}

const entry = (n: number): AuditEntry => ({ action: "tool.invoke", severity: "info", resource: `t${n}` });

test("entries pushed together are written as one batch by the timer", async (t) => {
  const { uow, log, batches } = recorder();
  const buffer = auditBuffer({ uow, log, logger: { error() {} }, intervalMs: 5 });
  for (let n = 0; n < 3; n++) buffer.push(entry(n));
  t.is(batches.length, 0, "nothing is written on the call path");
  await until(() => batches.length === 1, "the batch");
  t.deepEqual(
    batches[0]!.map((e) => e.resource),
    ["t0", "t1", "t2"],
  );
  await buffer.close();
});

test("a full batch is written at once, in pieces of maxBatch; close writes what is left; a failure is logged", async (t) => {
  const { uow, log, batches } = recorder(true);
  const errors: string[] = [];
  const buffer = auditBuffer({ uow, log, logger: { error: (_o: object, m: string) => errors.push(m) }, intervalMs: 60_000, maxBatch: 2 });
  buffer.push(entry(0));
  buffer.push(entry(1));
  buffer.push(entry(2));
  await buffer.close();
  t.deepEqual(
    batches.map((b) => b.map((e) => e.resource)),
    [["t0", "t1"], ["t2"]],
  );
  t.deepEqual(errors, ["could not write tool audit entries"]);
});
