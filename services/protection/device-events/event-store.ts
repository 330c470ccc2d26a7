// Writing device events: one statement stores the events (an agent's id once per device: a
// replayed event is skipped; client ids taken in order) and adds the stored ones to the hourly rollup, counted per batch
// and upserted in key order (device, hour, enrollment, type), so concurrent batches of one
// device lock its rollup rows in the same order and never deadlock.
import type { EntityManager } from "@mikro-orm/postgresql";
import { uuidv7 } from "../domain/ids.js";

export const eventTypes = ["block", "bypass_attempt", "tamper_attempt", "enrollment_change", "heartbeat_missed"] as const;
export type EventType = (typeof eventTypes)[number];
export const eventLayers = ["dns", "application", "browser"] as const;

export interface NewDeviceEvent {
  deviceId: string;
  accountId: string;
  enrollmentId: string;
  clientId?: string | null;
  eventType: EventType;
  timestamp: Date;
  domain?: string | null;
  layer?: string | null;
  detail?: Record<string, unknown>;
}

/** Stores `events` (received now) in the caller's transaction; answers how many were new. */
export async function storeDeviceEvents(em: EntityManager, events: readonly NewDeviceEvent[], receivedAt = new Date()): Promise<number> {
  if (events.length === 0) return 0;
  const at = receivedAt.getTime();
  const rows = events.map((e) => ({
    id: uuidv7(at),
    device_id: e.deviceId,
    account_id: e.accountId,
    enrollment_id: e.enrollmentId,
    client_id: e.clientId ?? null,
    event_type: e.eventType,
    timestamp: e.timestamp.toISOString(),
    domain: e.domain ?? null,
    layer: e.layer ?? null,
    detail: e.detail ?? {},
  }));
  const [result] = await em.execute<{ stored: number }[]>(
    `with "input" as (
       select * from jsonb_to_recordset(?::jsonb) as v("id" uuid, "device_id" uuid, "account_id" uuid, "enrollment_id" uuid,
         "client_id" uuid, "event_type" text, "timestamp" timestamptz, "domain" text, "layer" text, "detail" jsonb)
     ), "stored" as (
       insert into "protection_device_event"
         ("id", "device_id", "account_id", "enrollment_id", "client_id", "event_type", "timestamp", "domain", "layer", "detail", "received_at")
       select "id", "device_id", "account_id", "enrollment_id", "client_id", "event_type", "timestamp", "domain", "layer",
              coalesce("detail", '{}'::jsonb), ?::timestamptz
         from "input" order by "device_id", "client_id"
       on conflict ("device_id", "client_id") do nothing
       returning "device_id", "enrollment_id", "event_type", "timestamp"
     ), "counted" as (
       select "device_id", date_trunc('hour', "timestamp", 'UTC') as "hour", "enrollment_id", "event_type", count(*)::int as "n",
              max("timestamp") as "last_at"
         from "stored" group by 1, 2, 3, 4
     ), "rolled" as (
       insert into "protection_event_rollup" ("device_id", "hour", "enrollment_id", "event_type", "count", "last_at")
       select "device_id", "hour", "enrollment_id", "event_type", "n", "last_at" from "counted"
        order by "device_id", "hour", "enrollment_id", "event_type"
       on conflict ("device_id", "hour", "enrollment_id", "event_type")
       do update set "count" = "protection_event_rollup"."count" + excluded."count",
                     "last_at" = greatest("protection_event_rollup"."last_at", excluded."last_at")
     )
     select count(*)::int as "stored" from "stored"`,
    [JSON.stringify(rows), receivedAt],
  );
  return Number(result?.stored ?? 0);
}

/** An enrollment's status changed: one enrollment_change `{ from, to }` for each of its devices. */
export async function recordEnrollmentChange(
  em: EntityManager,
  devices: readonly { id: string; accountId: string }[],
  enrollmentId: string,
  from: string,
  to: string,
  at = new Date(),
): Promise<void> {
  await storeDeviceEvents(
    em,
    devices.map((d) => ({
      deviceId: d.id,
      accountId: d.accountId,
      enrollmentId,
      eventType: "enrollment_change" as const,
      timestamp: at,
      detail: { from, to },
    })),
    at,
  );
}
