// SQL of the mail queue: claiming due messages (SKIP LOCKED and a lease, so instances never hold
// one message at once), deleting a sent one, rescheduling or failing one. Only the lease holder's
// outcome applies. Times that schedule work come from the database clock.
import type { EntityManager } from "@mikro-orm/postgresql";

export interface ClaimedMail {
  id: string;
  recipient: string;
  subject: string;
  textBody: string;
  htmlBody: string | null;
  /** This attempt's number (attempts started so far, this one included). */
  attemptNumber: number;
  createdAt: Date;
  leaseToken: string;
}

export async function claimDueMail(
  table: string,
  em: EntityManager,
  limit: number,
  leaseMs: number,
  leaseToken: string,
): Promise<ClaimedMail[]> {
  const rows = await em.execute<Record<string, unknown>[]>(
    `with due as (
       select "id" from "${table}"
       where "status" = 'pending' and "next_attempt_at" <= now()
       order by "next_attempt_at", "created_at"
       limit ?
       for update skip locked
     )
     update "${table}" q set
       "attempt_count" = q."attempt_count" + 1,
       "lease_token" = ?::uuid,
       "next_attempt_at" = now() + ? * interval '1 millisecond',
       "updated_at" = now()
     from due where q."id" = due."id"
     returning q."id", q."recipient", q."subject", q."text_body", q."html_body", q."attempt_count", q."created_at"`,
    [limit, leaseToken, leaseMs],
  );
  return rows.map((r) => ({
    id: String(r.id),
    recipient: String(r.recipient),
    subject: String(r.subject),
    textBody: String(r.text_body),
    htmlBody: r.html_body === null ? null : String(r.html_body),
    attemptNumber: Number(r.attempt_count),
    createdAt: new Date(r.created_at as string | Date),
    leaseToken,
  }));
}

/** A sent message leaves the queue. */
export async function deleteSent(table: string, em: EntityManager, mail: ClaimedMail): Promise<void> {
  await em.execute(`delete from "${table}" where "id" = ? and "lease_token" = ?::uuid`, [mail.id, mail.leaseToken], "run");
}

/** Due again after `delayMs`, or failed for good when `delayMs` is undefined. */
export async function recordFailure(
  table: string,
  em: EntityManager,
  mail: ClaimedMail,
  error: string,
  delayMs: number | undefined,
): Promise<void> {
  await em.execute(
    `update "${table}" set
       "status" = ?,
       "next_attempt_at" = case when ? then now() + ?::bigint * interval '1 millisecond' else "next_attempt_at" end,
       "lease_token" = null,
       "last_error" = ?,
       "updated_at" = now()
     where "id" = ? and "lease_token" = ?::uuid`,
    [delayMs === undefined ? "failed" : "pending", delayMs !== undefined, Math.round(delayMs ?? 0), error, mail.id, mail.leaseToken],
    "run",
  );
}

/** Hands a claimed message back uncounted and due at once (the worker is stopping). */
export async function releaseMail(table: string, em: EntityManager, mail: ClaimedMail): Promise<void> {
  await em.execute(
    `update "${table}" set "attempt_count" = "attempt_count" - 1, "next_attempt_at" = now(), "lease_token" = null, "updated_at" = now()
     where "id" = ? and "lease_token" = ?::uuid`,
    [mail.id, mail.leaseToken],
    "run",
  );
}

/** Milliseconds until the earliest pending message is due (0 when one is due now); undefined when none is pending. */
export async function msUntilNextMail(table: string, em: EntityManager): Promise<number | undefined> {
  const [row] = await em.execute<{ ms: string | number | null }[]>(
    `select extract(epoch from (min("next_attempt_at") - now())) * 1000 as "ms" from "${table}" where "status" = 'pending'`,
  );
  if (!row || row.ms === null) return undefined;
  return Math.max(0, Number(row.ms));
}

export async function mailDepth(table: string, em: EntityManager): Promise<{ pending: number; failed: number }> {
  const [row] = await em.execute<{ pending: string | number; failed: string | number }[]>(
    `select count(*) filter (where "status" = 'pending') as "pending", count(*) filter (where "status" = 'failed') as "failed" from "${table}"`,
  );
  return { pending: Number(row?.pending ?? 0), failed: Number(row?.failed ?? 0) };
}
