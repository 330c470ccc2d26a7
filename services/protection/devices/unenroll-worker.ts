// Completes self-tier unenrollments at eligible_at by the server's clock. Durable: the deadline is
// the row's eligible_at, so a restart resumes; once only: rows are claimed with
// `for update skip locked` and re-checked in the claiming transaction, so two instances never
// complete one twice. It sleeps until the next deadline, and looks at least every 5 s for
// deadlines set by other instances.
import { LockMode } from "@mikro-orm/core";
import type { Logger } from "pino";
import type { Database } from "../../runtime/database/index.js";
import type { UnitOfWork } from "../../runtime/outbox/index.js";
import { EnrollmentEntity } from "../store/devices.js";
import type { DeviceAuthority } from "./device-authority.js";
import { type RepeatingJob, repeatingJob } from "./repeating-job.js";
import { completeUnenrollment } from "./unenrollment.js";

const POLL_MS = 5_000;
const BATCH = 100;

export function startUnenrollWorker(deps: { db: Database; uow: UnitOfWork; authority: DeviceAuthority; logger: Logger }): RepeatingJob {
  async function completeDue(): Promise<number> {
    return deps.uow.run(async (tx) => {
      const due = await tx.em.find(
        EnrollmentEntity,
        { status: "pending_delay", eligibleAt: { $lte: new Date() } },
        { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE, orderBy: { eligibleAt: "asc" }, limit: BATCH },
      );
      for (const row of due) await completeUnenrollment(tx, deps.authority, row, { reason: "time_delay" });
      return due.length;
    });
  }

  return repeatingJob({
    name: "unenroll worker",
    logger: deps.logger,
    retryMs: POLL_MS,
    async run() {
      if ((await completeDue()) === BATCH) return 0;
      const [next] = await deps.db
        .em()
        .execute<{ eligible_at: Date | null }[]>(
          `select min("eligible_at") as "eligible_at" from "protection_enrollment" where "status" = 'pending_delay'`,
        );
      if (!next?.eligible_at) return POLL_MS;
      return Math.min(POLL_MS, new Date(next.eligible_at).getTime() - Date.now());
    },
  });
}
