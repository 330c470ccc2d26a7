// protection.v1.DeviceEventService handlers: batches of events from a device's agent (stored
// whole or refused whole, replays stored once), the events a caller may see, newest first, and
// the counts per type over the caller's devices.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { DeviceEvent, DeviceEventService, EventInput } from "../../gen/protection/v1/device_event_pb.js";
import { EventBatchIngestedSchema } from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import type { ProtectionDeps } from "./deps.js";
import { deviceNotFound, forbidden, scopeOf } from "./device-events/access.js";
import { eventLayers, eventTypes, type EventType, type NewDeviceEvent, storeDeviceEvents } from "./device-events/event-store.js";
import { validationError } from "./errors.js";
import { DeviceEntity } from "./store/devices.js";
import { bearerOf } from "./tokens/token-service.js";

const MAX_BATCH = 100;
const MAX_DETAIL_BYTES = 4096;
const MAX_AHEAD_MS = 5 * 60_000;
const dayMs = 86_400_000;

/** PostgreSQL's jsonb holds no NUL character, in keys or strings. */
function holdsNul(value: JsonValue): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(holdsNul);
  if (value !== null && typeof value === "object") return Object.entries(value).some(([k, v]) => k.includes("\u0000") || holdsNul(v));
  return false;
}

const isEventType = (value: string): value is EventType => (eventTypes as readonly string[]).includes(value);

/** The batch's events as rows of `device`, or 400 naming the first bad `events[i].field`. */
function checkBatch(
  events: readonly EventInput[],
  maxAgeDays: number,
  now: number,
): Omit<NewDeviceEvent, "deviceId" | "accountId" | "enrollmentId">[] {
  if (events.length < 1 || events.length > MAX_BATCH) {
    throw validationError("events", `events must hold 1 to ${MAX_BATCH} events (it holds ${events.length})`);
  }
  const oldest = now - maxAgeDays * dayMs;
  const clientIds = new Map<string, number>();
  return events.map((event, i) => {
    const field = (name: string) => `events[${i}].${name}`;
    const refuse = (name: string, message: string) => validationError(field(name), `${field(name)} ${message}`);
    let clientId: string | null = null;
    if (event.id !== undefined) {
      if (!isUuid(event.id)) throw refuse("id", "must be a UUID");
      clientId = event.id.toLowerCase();
      const earlier = clientIds.get(clientId);
      if (earlier !== undefined) throw refuse("id", `repeats events[${earlier}].id`);
      clientIds.set(clientId, i);
    }
    if (!isEventType(event.eventType)) throw refuse("event_type", `must be one of ${eventTypes.join(", ")}`);
    if (!event.timestamp) throw refuse("timestamp", "is required");
    const timestamp = timestampDate(event.timestamp);
    if (Number.isNaN(timestamp.getTime())) throw refuse("timestamp", "must be a valid time");
    if (timestamp.getTime() > now + MAX_AHEAD_MS) throw refuse("timestamp", "must be at most 5 minutes ahead of the server's clock");
    if (timestamp.getTime() < oldest) throw refuse("timestamp", `must be at most ${maxAgeDays} days old`);
    let domain: string | null = null;
    if (event.domain !== undefined) {
      domain = event.domain.trim().toLowerCase();
      if (domain.length < 1 || domain.length > 253) throw refuse("domain", "must hold 1 to 253 characters");
      if (domain.includes("\u0000")) throw refuse("domain", "must not hold a NUL character");
    }
    let layer: string | null = null;
    if (event.layer !== undefined) {
      if (!(eventLayers as readonly string[]).includes(event.layer)) throw refuse("layer", `must be one of ${eventLayers.join(", ")}`);
      layer = event.layer;
    }
    const detail: JsonObject = event.detail ?? {};
    const json = JSON.stringify(detail);
    if (Buffer.byteLength(json, "utf8") > MAX_DETAIL_BYTES) throw refuse("detail", "must be at most 4 KiB of JSON");
    if (holdsNul(detail)) throw refuse("detail", "must not hold a NUL character (\\u0000)");
    return { clientId, eventType: event.eventType, timestamp, domain, layer, detail };
  });
}

interface EventRow {
  id: string;
  device_id: string;
  enrollment_id: string | null;
  event_type: string;
  timestamp: Date;
  domain: string | null;
  layer: string | null;
  detail: JsonObject | string;
  received_at: Date;
}

function toEvent(row: EventRow): Omit<DeviceEvent, "$typeName"> {
  return {
    id: row.id,
    deviceId: row.device_id,
    ...(row.enrollment_id ? { enrollmentId: row.enrollment_id } : {}),
    eventType: row.event_type,
    timestamp: timestampFromDate(new Date(row.timestamp)),
    ...(row.domain !== null ? { domain: row.domain } : {}),
    ...(row.layer !== null ? { layer: row.layer } : {}),
    detail: typeof row.detail === "string" ? (JSON.parse(row.detail) as JsonObject) : row.detail,
    receivedAt: timestampFromDate(new Date(row.received_at)),
  };
}

export function deviceEventService(deps: ProtectionDeps): ServiceImpl<typeof DeviceEventService> {
  const { maxAgeDays } = deps.settings.protection.events;
  const callerId = () => bearerOf(currentIdentity()).name;

  return {
    async ingestEvents(req) {
      const caller = callerId();
      if (req.deviceId === "") throw validationError("device_id", "device_id is required");
      const checked = checkBatch(req.events, maxAgeDays, Date.now());
      if (!isUuid(req.deviceId)) throw deviceNotFound();
      const accepted = checked.length;
      await deps.uow.run(async (tx) => {
        const device = await tx.em.findOne(DeviceEntity, { id: req.deviceId });
        if (!device) throw deviceNotFound();
        if (device.accountId !== caller) throw forbidden("Only the device's owner can send its events.");
        const stored = await storeDeviceEvents(
          tx.em,
          checked.map((e) => ({ ...e, deviceId: device.id, accountId: device.accountId, enrollmentId: device.enrollmentId })),
        );
        tx.record(EventBatchIngestedSchema, {
          deviceId: device.id,
          accountId: device.accountId,
          enrollmentId: device.enrollmentId,
          accepted,
          stored,
          blockCount: checked.filter((e) => e.eventType === "block").length,
          tamperAlerts: checked.filter((e) => e.eventType === "tamper_attempt" || e.eventType === "bypass_attempt").length,
        });
      });
      return { accepted };
    },

    async listEvents(req) {
      const caller = callerId();
      const page = Math.max(1, req.page ?? 1);
      const perPage = Math.min(200, Math.max(1, req.perPage ?? 50));
      if (req.eventType !== undefined && !isEventType(req.eventType)) {
        throw validationError("event_type", `event_type must be one of ${eventTypes.join(", ")}`);
      }
      const em = deps.db.em();
      // The caller's own events by the owner stamped on them (an index of its own); else the scope's.
      const scope =
        req.deviceId === undefined && req.enrollmentId === undefined
          ? { rows: { where: `"account_id" = ?`, bindings: [caller] as unknown[] }, sight: "events" as const }
          : await scopeOf(em, caller, req);
      if (scope.sight !== "events") throw forbidden("Partners see this device's analytics; its events need detailed access.");
      const conditions = [scope.rows.where];
      const bindings = [...scope.rows.bindings];
      if (req.eventType !== undefined) {
        conditions.push(`"event_type" = ?`);
        bindings.push(req.eventType);
      }
      if (req.from) {
        conditions.push(`"timestamp" >= ?`);
        bindings.push(timestampDate(req.from));
      }
      if (req.to) {
        conditions.push(`"timestamp" < ?`);
        bindings.push(timestampDate(req.to));
      }
      const where = conditions.join(" and ");
      const [counted] = await em.execute<{ total: number }[]>(
        `select count(*)::int as "total" from "protection_device_event" where ${where}`,
        bindings,
      );
      const rows = await em.execute<EventRow[]>(
        `select "id", "device_id", "enrollment_id", "event_type", "timestamp", "domain", "layer", "detail", "received_at"
           from "protection_device_event" where ${where}
          order by "timestamp" desc, "id" desc limit ? offset ?`,
        [...bindings, perPage, (page - 1) * perPage],
      );
      return { data: rows.map(toEvent), page, perPage, total: counted?.total ?? 0 };
    },

    async getEventSummary() {
      const caller = callerId();
      const rows = await deps.db.em().execute<{ event_type: EventType; n: number }[]>(
        `select "event_type", sum("count")::int as "n" from "protection_event_rollup"
          where "device_id" in (select "id" from "protection_device" where "account_id" = ?)
          group by "event_type"`,
        [caller],
      );
      const counts: Record<EventType, number> = {
        block: 0,
        bypass_attempt: 0,
        tamper_attempt: 0,
        enrollment_change: 0,
        heartbeat_missed: 0,
      };
      for (const row of rows) counts[row.event_type] = row.n;
      return {
        block: counts.block,
        bypassAttempt: counts.bypass_attempt,
        tamperAttempt: counts.tamper_attempt,
        enrollmentChange: counts.enrollment_change,
        heartbeatMissed: counts.heartbeat_missed,
      };
    },
  };
}
