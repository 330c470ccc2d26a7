// SQL of the webhook queue: creating deliveries for an event, claiming due ones (SKIP LOCKED, so
// instances share the work), recording outcomes, endpoint state and the 24-hour statistics.
// Times that schedule work come from the database clock, so instances never disagree on "due".
import type { EntityManager } from "@mikro-orm/postgresql";
import type { WebhookTableNames } from "./webhook-tables.js";

export interface PendingDelivery {
  id: string;
  eventId: string;
  endpointKey: string;
  endpoint: string;
  eventType: string;
  webhookId: string;
  body: string;
  /** This attempt's number (attempts started so far, this one included). */
  attemptNumber: number;
  /** The lease this instance holds; the outcome only applies while it still matches. */
  leaseToken: string;
}

/** What one claimed delivery came to. */
export type DeliveryOutcome =
  | { kind: "delivered"; attempt: AttemptRecord }
  | { kind: "retry"; attempt: AttemptRecord; delayMs: number }
  | { kind: "failed"; attempt: AttemptRecord; disableEndpoint?: string }
  /** Not attempted after all (shutdown): the attempt is handed back uncounted and due at once. */
  | { kind: "released" };

export interface AttemptRecord {
  success: boolean;
  httpStatusCode: number | null;
  durationMs: number;
  error: string | null;
  endedAt: Date;
}

export interface FinishedDelivery {
  delivery: PendingDelivery;
  outcome: DeliveryOutcome;
}

const disabledError = "endpoint disabled after answering 410 Gone";

/**
 * One pending delivery per endpoint for an event, unless the event is already there (a
 * redelivery), the endpoint is disabled, or the event is not in this database's outbox: a NATS
 * server shared by several deployments carries their events on one stream, and only our own
 * are ours to deliver (`outboxRow`: the row of a bundled event, from its `outbox-row` header; a
 * bundle published in part keeps only its unpublished ids, so the row is what is checked).
 * Returns how many rows were created.
 */
export async function insertDeliveries(
  t: WebhookTableNames,
  em: EntityManager,
  event: { eventId: string; type: string; body: string; outboxRow?: string },
  endpoints: readonly { key: string; display: string }[],
): Promise<number> {
  if (endpoints.length === 0) return 0;
  const values = endpoints.map(() => "(?, ?)").join(", ");
  const rows = await em.execute<{ id: string }[]>(
    `insert into "${t.delivery}"
       ("id", "event_id", "endpoint_key", "endpoint", "event_type", "webhook_id", "body", "status", "attempt_count", "next_attempt_at", "created_at", "updated_at")
     select gen_random_uuid(), ?::uuid, e.key, e.endpoint, ?, ?, ?, 'pending', 0, now(), now(), now()
     from (values ${values}) as e(key, endpoint)
     where exists (select 1 from "outbox_event" where "id" = ?::uuid)
       and not exists (select 1 from "${t.endpoint}" s where s."endpoint_key" = e.key and s."disabled_at" is not null)
     on conflict ("event_id", "endpoint_key") do nothing
     returning "id"`,
    [
      event.eventId,
      event.type,
      webhookIdOf(event.eventId),
      event.body,
      ...endpoints.flatMap((e) => [e.key, e.display]),
      event.outboxRow ?? event.eventId,
      event.eventId,
      event.eventId,
    ],
  );
  return rows.length;
}

export function webhookIdOf(eventId: string): string {
  return `msg_${eventId}`;
}

/**
 * Leases up to `limit` due deliveries for `leaseMs`: a crashed instance's attempt is retried by
 * anyone once its lease runs out. Deliveries of a disabled endpoint are cancelled instead.
 */
export async function claimDue(
  t: WebhookTableNames,
  em: EntityManager,
  limit: number,
  leaseMs: number,
  leaseToken: string,
): Promise<PendingDelivery[]> {
  const rows = await em.execute<Record<string, unknown>[]>(
    `with due as (
       select d."id", s."disabled_at" is not null as "disabled"
       from "${t.delivery}" d
       left join "${t.endpoint}" s on s."endpoint_key" = d."endpoint_key"
       where d."status" = 'pending' and d."next_attempt_at" <= now()
       order by d."next_attempt_at"
       limit ?
       for update of d skip locked
     )
     update "${t.delivery}" d set
       "attempt_count" = case when due."disabled" then d."attempt_count" else d."attempt_count" + 1 end,
       "status" = case when due."disabled" then 'cancelled' else d."status" end,
       "finished_at" = case when due."disabled" then now() else null end,
       "last_error" = case when due."disabled" then ? else d."last_error" end,
       "lease_token" = case when due."disabled" then null else ?::uuid end,
       "next_attempt_at" = case when due."disabled" then d."next_attempt_at" else now() + ? * interval '1 millisecond' end,
       "updated_at" = now()
     from due
     where d."id" = due."id"
     returning d."id", d."event_id", d."endpoint_key", d."endpoint", d."event_type", d."webhook_id", d."body", d."attempt_count", d."status"`,
    [limit, disabledError, leaseToken, leaseMs],
  );
  return rows
    .filter((r) => r.status === "pending")
    .map((r) => ({
      id: String(r.id),
      eventId: String(r.event_id),
      endpointKey: String(r.endpoint_key),
      endpoint: String(r.endpoint),
      eventType: String(r.event_type),
      webhookId: String(r.webhook_id),
      body: String(r.body),
      attemptNumber: Number(r.attempt_count),
      leaseToken,
    }));
}

/** Logs the attempts and applies the outcomes of several deliveries, in the caller's transaction. */
export async function recordOutcomes(t: WebhookTableNames, em: EntityManager, finished: readonly FinishedDelivery[]): Promise<void> {
  const attempted = finished.filter((f) => f.outcome.kind !== "released");
  if (attempted.length) {
    const params: unknown[] = [];
    for (const { delivery, outcome } of attempted) {
      const a = (outcome as Exclude<DeliveryOutcome, { kind: "released" }>).attempt;
      params.push(
        delivery.id,
        delivery.eventId,
        delivery.attemptNumber,
        delivery.webhookId,
        delivery.eventType,
        delivery.endpoint,
        a.success,
        a.httpStatusCode,
        a.durationMs,
        a.error,
        a.endedAt,
      );
    }
    await em.execute(
      `insert into "${t.attempt}"
         ("id", "delivery_id", "event_id", "attempt_number", "correlation_id", "event_type", "endpoint", "success", "http_status_code", "duration_ms", "error", "created_at")
       values ${attempted.map(() => "(gen_random_uuid(), ?::uuid, ?::uuid, ?::int, ?, ?, ?, ?::boolean, ?::int, ?::int, ?, ?::timestamptz)").join(", ")}`,
      params,
      "run",
    );
  }

  const params: unknown[] = [];
  for (const { delivery, outcome } of finished) {
    const attempt = outcome.kind === "released" ? undefined : outcome.attempt;
    const status = outcome.kind === "delivered" ? "delivered" : outcome.kind === "failed" ? "failed" : "pending";
    params.push(
      delivery.id,
      delivery.leaseToken,
      status,
      outcome.kind === "released" ? -1 : 0,
      outcome.kind === "retry" ? Math.round(outcome.delayMs) : 0,
      attempt?.error ?? null,
      attempt?.httpStatusCode ?? null,
    );
  }
  // Applies only while the lease is still ours: after it ran out another instance may own the row.
  await em.execute(
    `update "${t.delivery}" d set
       "status" = v.status,
       "attempt_count" = d."attempt_count" + v.attempt_delta,
       "next_attempt_at" = case when v.status = 'pending' then now() + v.delay_ms * interval '1 millisecond' else d."next_attempt_at" end,
       "lease_token" = null,
       "last_error" = case when v.attempt_delta < 0 then d."last_error" else v.error end,
       "last_status_code" = case when v.attempt_delta < 0 then d."last_status_code" else v.status_code end,
       "finished_at" = case when v.status = 'pending' then null else now() end,
       "updated_at" = now()
     from (values ${finished.map(() => "(?::uuid, ?::uuid, ?::text, ?::int, ?::bigint, ?::text, ?::int)").join(", ")})
       as v("id", "token", "status", "attempt_delta", "delay_ms", "error", "status_code")
     where d."id" = v."id" and d."lease_token" = v."token"`,
    params,
    "run",
  );

  for (const { delivery, outcome } of finished) {
    if (outcome.kind === "failed" && outcome.disableEndpoint) await disableEndpoint(t, em, delivery, outcome.disableEndpoint);
  }
}

/** Durable and shared: every instance stops attempting the endpoint, and its queued deliveries are cancelled. */
async function disableEndpoint(t: WebhookTableNames, em: EntityManager, delivery: PendingDelivery, reason: string): Promise<void> {
  await em.execute(
    `insert into "${t.endpoint}" ("endpoint_key", "endpoint", "disabled_at", "disabled_reason", "updated_at")
     values (?, ?, now(), ?, now())
     on conflict ("endpoint_key") do update set
       "endpoint" = excluded."endpoint",
       "disabled_at" = coalesce("${t.endpoint}"."disabled_at", excluded."disabled_at"),
       "disabled_reason" = coalesce("${t.endpoint}"."disabled_reason", excluded."disabled_reason"),
       "updated_at" = now()`,
    [delivery.endpointKey, delivery.endpoint, reason],
    "run",
  );
  await em.execute(
    `update "${t.delivery}" set "status" = 'cancelled', "finished_at" = now(), "updated_at" = now(), "last_error" = ?
     where "endpoint_key" = ? and "status" = 'pending' and "lease_token" is null`,
    [disabledError, delivery.endpointKey],
    "run",
  );
}

/** Milliseconds until the earliest pending delivery is due (0 when one is due now); undefined when none is pending. */
export async function msUntilNextDue(t: WebhookTableNames, em: EntityManager): Promise<number | undefined> {
  const [row] = await em.execute<{ ms: string | number | null }[]>(
    `select extract(epoch from (min("next_attempt_at") - now())) * 1000 as "ms"
     from "${t.delivery}" where "status" = 'pending'`,
  );
  if (!row || row.ms === null) return undefined;
  return Math.max(0, Number(row.ms));
}

export interface DeliveryStats {
  deliveries: number;
  failures: number;
  avgDurationMs: number;
  lastDeliveredAt: Date | null;
  queueDepth: number;
}

export async function deliveryStats(t: WebhookTableNames, em: EntityManager): Promise<DeliveryStats> {
  const [row] = await em.execute<Record<string, unknown>[]>(
    `select w."deliveries", w."failures", w."avg_duration_ms",
       (select max("created_at") from "${t.attempt}" where "success") as "last_delivered_at",
       (select count(*) from "${t.delivery}" where "status" = 'pending') as "queue_depth"
     from (
       select count(*) as "deliveries",
         count(*) filter (where not "success") as "failures",
         coalesce(avg("duration_ms"), 0) as "avg_duration_ms"
       from "${t.attempt}"
       where "created_at" >= now() - interval '24 hours'
     ) w`,
  );
  const last = row?.last_delivered_at;
  return {
    deliveries: Number(row?.deliveries ?? 0),
    failures: Number(row?.failures ?? 0),
    avgDurationMs: Number(row?.avg_duration_ms ?? 0),
    lastDeliveredAt: last === null || last === undefined ? null : new Date(last as string | Date),
    queueDepth: Number(row?.queue_depth ?? 0),
  };
}

/** Keys of the endpoints disabled so far (a 410 Gone), with the URL they were disabled under. */
export async function disabledEndpoints(t: WebhookTableNames, em: EntityManager): Promise<{ key: string; endpoint: string }[]> {
  const rows = await em.execute<{ endpoint_key: string; endpoint: string }[]>(
    `select "endpoint_key", "endpoint" from "${t.endpoint}" where "disabled_at" is not null order by "disabled_at"`,
  );
  return rows.map((r) => ({ key: r.endpoint_key, endpoint: r.endpoint }));
}

export async function consumerId(t: WebhookTableNames, em: EntityManager): Promise<string> {
  const [row] = await em.execute<{ consumer_id: string }[]>(`select "consumer_id" from "${t.consumer}"`);
  if (!row) throw new Error(`${t.consumer} has no row; the webhook tables' migration did not run`);
  return row.consumer_id;
}
