// Turns devices offline after 3 missed heartbeat intervals, at least once per interval: each
// outage records one heartbeat_missed (a row of protection_device_event, which /v1/events reads,
// and protection.v1.device.heartbeat_missed). The conditional update claims each device once,
// whichever instance gets there first; the next heartbeat makes it active again.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import { DeviceHeartbeatMissedSchema } from "../../../gen/protection/v1/events_pb.js";
import type { UnitOfWork } from "../../runtime/outbox/index.js";
import { type NewDeviceEvent, storeDeviceEvents } from "../device-events/event-store.js";
import { type RepeatingJob, repeatingJob } from "./repeating-job.js";

const MISSED_INTERVALS = 3;
const BATCH = 500;

export function startOfflineWorker(deps: { uow: UnitOfWork; logger: Logger; heartbeatIntervalSeconds: number }): RepeatingJob {
  const intervalMs = deps.heartbeatIntervalSeconds * 1000;
  // Half an interval: a device is seen offline within 3.5 intervals of its last heartbeat.
  const everyMs = Math.min(Math.max(intervalMs / 2, 250), 60_000);

  async function markOffline(): Promise<number> {
    return deps.uow.run(async (tx) => {
      const now = new Date();
      const rows = await tx.em.execute<{ id: string; account_id: string; enrollment_id: string; last_heartbeat: Date | null }[]>(
        `update "protection_device" set "status" = 'offline', "updated_at" = ?
          where "id" in (select "id" from "protection_device"
                          where "status" = 'active' and coalesce("last_heartbeat", "created_at") < ?
                          limit ${BATCH} for update skip locked)
            and "status" = 'active'
      returning "id", "account_id", "enrollment_id", "last_heartbeat"`,
        [now, new Date(now.getTime() - MISSED_INTERVALS * intervalMs)],
      );
      const missed: NewDeviceEvent[] = [];
      for (const row of rows) {
        const lastHeartbeat = row.last_heartbeat ? new Date(row.last_heartbeat) : null;
        missed.push({
          deviceId: row.id,
          accountId: row.account_id,
          enrollmentId: row.enrollment_id,
          eventType: "heartbeat_missed",
          timestamp: now,
          detail: {
            enrollment_id: row.enrollment_id,
            account_id: row.account_id,
            last_heartbeat: lastHeartbeat?.toISOString() ?? null,
            missed_intervals: MISSED_INTERVALS,
          },
        });
        tx.record(DeviceHeartbeatMissedSchema, {
          deviceId: row.id,
          accountId: row.account_id,
          enrollmentId: row.enrollment_id,
          ...(lastHeartbeat ? { lastHeartbeat: timestampFromDate(lastHeartbeat) } : {}),
        });
      }
      await storeDeviceEvents(tx.em, missed, now);
      return rows.length;
    });
  }

  return repeatingJob({
    name: "offline devices",
    logger: deps.logger,
    retryMs: everyMs,
    async run() {
      return (await markOffline()) === BATCH ? 0 : everyMs;
    },
  });
}
