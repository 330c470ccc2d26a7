// One transaction's worth of observations: lock their devices, insert the rows (duplicates fall
// out through the unique index), evaluate speed and geofence rules in input order against the
// devices' stored state, then write alerts, states and events with one multi-row statement each.
// A single observation is a chunk of one, so the REST path and the bulk path share every rule.
import type { EntityManager } from "@mikro-orm/postgresql";
import { randomUUID } from "node:crypto";
import {
  GeofenceBreachDetectedSchema,
  ObservationRecordedSchema,
  SpeedAlertRaisedSchema,
} from "../../../gen/tracking/v1/events_pb.js";
import { evaluateFences } from "../domain/geofence-rule.js";
import type { CheckedObservation, ObservationSource } from "../domain/observation-types.js";
import { judgeSpeed } from "../domain/speed-rule.js";
import { subjects } from "../events/subjects.js";
import { toBreach, toObservation, toSpeedAlert } from "../mappers/to-message.js";
import type { BreachRow, SpeedAlertRow } from "../store/alert-entities.js";
import type { ObservationRow } from "../store/observation-entity.js";
import { EventBatch } from "./event-batch.js";
import type { FenceIndex, IndexedFence } from "./fence-index.js";
import { queryOn, toDate, toDateOrNull, type Query } from "./sql.js";

export interface ChunkItem {
  /** Position in the caller's input. */
  index: number;
  observation: CheckedObservation;
}

export type ChunkOutcome =
  | { kind: "recorded"; observation: ObservationRow; speedAlerts: SpeedAlertRow[]; breaches: BreachRow[] }
  /** `observation` is the stored one when the caller asked for it (single records answer it). */
  | { kind: "duplicate"; observation?: ObservationRow }
  | { kind: "unknown-device" };

export interface ChunkContext {
  source: ObservationSource;
  index: FenceIndex;
  defaultThresholdKmh: number;
  cooldownMs: number;
  /** Load the stored row of a duplicate (the single path answers it; the bulk path only counts). */
  loadDuplicates: boolean;
}

interface DeviceState {
  id: string;
  identifier: string | null;
  assetId: string | null;
  assetThresholdKmh: number | null;
  lastSeenAt: Date | null;
  seenMoved: boolean;
  /** Newest speed alert time; undefined until loaded (only devices that go over need it). */
  lastAlertAt?: Date | null;
  /** Fences the device is inside, per tracking_geofence_state. */
  inside: Set<string>;
}

export async function recordChunk(tx: EntityManager, items: readonly ChunkItem[], ctx: ChunkContext): Promise<Map<number, ChunkOutcome>> {
  const q = queryOn(tx);
  const outcomes = new Map<number, ChunkOutcome>();
  const now = new Date();

  const devices = await lockDevices(q, items);
  const byIdentifier = new Map([...devices.values()].filter((d) => d.identifier !== null).map((d) => [d.identifier!, d]));

  // Rows to insert, deduplicated within the chunk; a repeat points at the first of its key.
  const rows: { item: ChunkItem; device: DeviceState; row: ObservationRow }[] = [];
  const firstOfKey = new Map<string, number>();
  const repeats: { item: ChunkItem; first: number }[] = [];
  for (const item of items) {
    const ref = item.observation.device;
    const device = ref.kind === "id" ? devices.get(ref.id) : byIdentifier.get(ref.identifier);
    if (!device) {
      outcomes.set(item.index, { kind: "unknown-device" });
      continue;
    }
    const key = `${device.id}|${item.observation.observedAt.getTime()}`;
    const first = firstOfKey.get(key);
    if (first !== undefined) {
      repeats.push({ item, first });
      continue;
    }
    firstOfKey.set(key, rows.length);
    rows.push({ item, device, row: observationRow(item.observation, device, ctx.source, now) });
  }

  const inserted = await insertObservations(q, rows.map((r) => r.row));
  const fresh = rows.filter((r) => inserted.has(r.row.id));
  for (const r of rows) {
    if (!inserted.has(r.row.id)) outcomes.set(r.item.index, { kind: "duplicate" });
  }

  await loadDeviceAlertState(q, fresh, ctx);
  const { candidates, live } = await loadLiveFences(q, fresh, ctx.index);

  // Evaluate in input order: each observation sees the state the previous ones left.
  const speedAlerts: SpeedAlertRow[] = [];
  const breaches: BreachRow[] = [];
  const events = new EventBatch(now);
  const stateChanges = new Map<string, { deviceId: string; geofenceId: string; inside: boolean; observedAt: Date }>();
  for (const { item, device, row } of fresh) {
    const found = { speedAlerts: [] as SpeedAlertRow[], breaches: [] as BreachRow[] };
    const inOrder = device.lastSeenAt === null || row.observedAt > device.lastSeenAt;
    if (inOrder) {
      device.lastSeenAt = row.observedAt;
      device.seenMoved = true;

      const speed = judgeSpeed({
        speedKmh: row.speedKmh,
        assetThresholdKmh: device.assetThresholdKmh,
        defaultThresholdKmh: ctx.defaultThresholdKmh,
        observedAt: row.observedAt,
        lastAlertAt: device.lastAlertAt ?? null,
        cooldownMs: ctx.cooldownMs,
      });
      if (speed.raise) {
        device.lastAlertAt = row.observedAt;
        found.speedAlerts.push({ ...alertColumns(row, now), speedKmh: row.speedKmh!, thresholdKmh: speed.thresholdKmh });
      }

      const fences = [...candidates.get(row.id)!, ...device.inside].flatMap((id) => live.get(id) ?? []);
      for (const t of evaluateFences(row, fences, (id) => device.inside.has(id))) {
        if (t.type === "Enter") device.inside.add(t.fence.id);
        else device.inside.delete(t.fence.id);
        stateChanges.set(`${device.id}|${t.fence.id}`, { deviceId: device.id, geofenceId: t.fence.id, inside: t.type === "Enter", observedAt: row.observedAt });
        found.breaches.push({ ...alertColumns(row, now), geofenceId: t.fence.id, breachEventType: t.type });
      }
    }
    speedAlerts.push(...found.speedAlerts);
    breaches.push(...found.breaches);
    outcomes.set(item.index, { kind: "recorded", observation: row, ...found });

    events.add(subjects.observationRecorded, ObservationRecordedSchema, { observation: toObservation(row) });
    for (const alert of found.speedAlerts) {
      events.add(subjects.speedAlertRaised, SpeedAlertRaisedSchema, {
        speedAlert: toSpeedAlert(alert, { deviceIdentifier: device.identifier }),
      });
    }
    for (const breach of found.breaches) {
      events.add(subjects.breachDetected, GeofenceBreachDetectedSchema, {
        breach: toBreach(breach, { deviceIdentifier: device.identifier, geofenceName: live.get(breach.geofenceId)?.name ?? null }),
      });
    }
  }

  await updateLastSeen(q, [...devices.values()].filter((d) => d.seenMoved));
  await upsertStates(q, [...stateChanges.values()]);
  await insertSpeedAlerts(q, speedAlerts);
  await insertBreaches(q, breaches);
  await events.write(tx);

  for (const { item, first } of repeats) {
    const original = rows[first]!;
    const stored = inserted.has(original.row.id) ? original.row : undefined;
    outcomes.set(item.index, { kind: "duplicate", ...(stored ? { observation: stored } : {}) });
  }
  if (ctx.loadDuplicates) await loadDuplicateRows(q, outcomes, items, devices, byIdentifier);
  return outcomes;
}

/**
 * Locks the chunk's devices (in id order, so concurrent chunks cannot deadlock) and reads what
 * the rules need. The lock serialises observations of one device across instances: two of them
 * can never both decide they are the first inside a fence.
 */
async function lockDevices(q: Query, items: readonly ChunkItem[]): Promise<Map<string, DeviceState>> {
  const ids = new Set<string>();
  const identifiers = new Set<string>();
  for (const { observation: { device } } of items) {
    if (device.kind === "id") ids.add(device.id);
    else identifiers.add(device.identifier);
  }
  const found = await q<{ id: string; identifier: string | null; asset_id: string | null; last_seen_at: unknown; speed_threshold_kmh: number | null }>(
    `select d.id, d.identifier, d.asset_id, d.last_seen_at, a.speed_threshold_kmh
       from tracking_device d left join tracking_asset a on a.id = d.asset_id
      where d.id = any(?::uuid[]) or d.identifier = any(?::text[])
      order by d.id
        for update of d`,
    [[...ids], [...identifiers]],
  );
  return new Map(
    found.map((d) => [
      d.id,
      {
        id: d.id,
        identifier: d.identifier,
        assetId: d.asset_id,
        assetThresholdKmh: d.speed_threshold_kmh,
        lastSeenAt: toDateOrNull(d.last_seen_at),
        seenMoved: false,
        inside: new Set<string>(),
      },
    ]),
  );
}

function observationRow(o: CheckedObservation, device: DeviceState, source: string, now: Date): ObservationRow {
  return {
    id: randomUUID(),
    deviceId: device.id,
    // The device's asset now: history by asset stays right after the device moves to another.
    assetId: device.assetId,
    observedAt: o.observedAt,
    latitude: o.latitude,
    longitude: o.longitude,
    altitude: o.altitude,
    accuracyMeters: o.accuracyMeters,
    speedKmh: o.speedKmh,
    headingDegrees: o.headingDegrees,
    metadata: o.metadata,
    source,
    receivedAt: now,
  };
}

/** Inserts with `on conflict do nothing`: a concurrent duplicate is skipped, not an error. Answers the ids written. */
async function insertObservations(q: Query, rows: ObservationRow[]): Promise<Set<string>> {
  if (!rows.length) return new Set();
  const written = await q<{ id: string }>(
    `insert into tracking_observation
       (id, device_id, asset_id, observed_at, latitude, longitude, altitude, accuracy_meters, speed_kmh, heading_degrees, metadata, source, received_at)
     select * from unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::timestamptz[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::text[], ?::text[], ?::timestamptz[])
     on conflict (device_id, observed_at) do nothing
     returning id`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.deviceId),
      rows.map((r) => r.assetId),
      rows.map((r) => r.observedAt.toISOString()),
      rows.map((r) => r.latitude),
      rows.map((r) => r.longitude),
      rows.map((r) => r.altitude),
      rows.map((r) => r.accuracyMeters),
      rows.map((r) => r.speedKmh),
      rows.map((r) => r.headingDegrees),
      rows.map((r) => r.metadata),
      rows.map((r) => r.source),
      rows.map((r) => r.receivedAt.toISOString()),
    ],
  );
  return new Set(written.map((w) => w.id));
}

/** Reads the inside-states of the devices that got new observations, and the last alert time of those that may need it. */
async function loadDeviceAlertState(q: Query, fresh: { device: DeviceState; row: ObservationRow }[], ctx: ChunkContext): Promise<void> {
  const devices = new Map(fresh.map((f) => [f.device.id, f.device]));
  if (!devices.size) return;
  const states = await q<{ device_id: string; geofence_id: string }>(
    `select device_id, geofence_id from tracking_geofence_state where device_id = any(?::uuid[]) and inside`,
    [[...devices.keys()]],
  );
  for (const s of states) devices.get(s.device_id)?.inside.add(s.geofence_id);
  const speeding = new Set<string>();
  for (const { device, row } of fresh) {
    const verdict = judgeSpeed({
      speedKmh: row.speedKmh,
      assetThresholdKmh: device.assetThresholdKmh,
      defaultThresholdKmh: ctx.defaultThresholdKmh,
      observedAt: row.observedAt,
      lastAlertAt: null,
      cooldownMs: ctx.cooldownMs,
    });
    if (verdict.over) speeding.add(device.id);
  }
  if (!speeding.size) return;
  const last = await q<{ device_id: string; last: unknown }>(
    `select device_id, max(occurred_at) as last from tracking_speed_alert where device_id = any(?::uuid[]) group by device_id`,
    [[...speeding]],
  );
  for (const id of speeding) devices.get(id)!.lastAlertAt = null;
  for (const l of last) devices.get(l.device_id)!.lastAlertAt = toDateOrNull(l.last);
}

/**
 * The index proposes fences near each fix; the database decides. The fences proposed, plus those
 * the devices are inside (to notice a device leaving one that is now far away or was moved), are
 * read back if still active, with their current shape, and share-locked so that no instance
 * deactivates or deletes one while this chunk writes states for it. So a stale index can delay
 * a new fence, but never evaluates a deleted, deactivated or outdated one.
 */
async function loadLiveFences(
  q: Query,
  fresh: { device: DeviceState; row: ObservationRow }[],
  index: FenceIndex,
): Promise<{ candidates: Map<string, string[]>; live: Map<string, IndexedFence> }> {
  const candidates = new Map<string, string[]>();
  const wanted = new Set<string>();
  for (const { device, row } of fresh) {
    const near = index.size ? index.candidates(row.latitude, row.longitude).map((f) => f.id) : [];
    candidates.set(row.id, near);
    for (const id of near) wanted.add(id);
    for (const id of device.inside) wanted.add(id);
  }
  const live = new Map<string, IndexedFence>();
  if (!wanted.size) return { candidates, live };
  const rows = await q<{ id: string; name: string | null; center_latitude: number; center_longitude: number; radius_meters: number }>(
    `select id, name, center_latitude, center_longitude, radius_meters
       from tracking_geofence
      where id = any(?::uuid[]) and is_active
      order by id
        for share`,
    [[...wanted]],
  );
  for (const r of rows) {
    live.set(r.id, { id: r.id, name: r.name, centerLatitude: r.center_latitude, centerLongitude: r.center_longitude, radiusMeters: r.radius_meters });
  }
  return { candidates, live };
}

function alertColumns(row: ObservationRow, now: Date) {
  return {
    id: randomUUID(),
    deviceId: row.deviceId,
    assetId: row.assetId,
    observationId: row.id,
    latitude: row.latitude,
    longitude: row.longitude,
    occurredAt: row.observedAt,
    acknowledged: false,
    acknowledgedBy: null,
    acknowledgedAt: null,
    createdAt: now,
  };
}

async function updateLastSeen(q: Query, devices: DeviceState[]): Promise<void> {
  if (!devices.length) return;
  await q(
    `update tracking_device d set last_seen_at = v.seen
       from unnest(?::uuid[], ?::timestamptz[]) as v(id, seen)
      where d.id = v.id and (d.last_seen_at is null or d.last_seen_at < v.seen)`,
    [devices.map((d) => d.id), devices.map((d) => d.lastSeenAt!.toISOString())],
  );
}

async function upsertStates(q: Query, states: { deviceId: string; geofenceId: string; inside: boolean; observedAt: Date }[]): Promise<void> {
  if (!states.length) return;
  // The exists() keeps a fence deleted elsewhere (and not yet gone from this index) from failing the chunk.
  await q(
    `insert into tracking_geofence_state (device_id, geofence_id, inside, observed_at)
     select v.device_id, v.geofence_id, v.inside, v.observed_at
       from unnest(?::uuid[], ?::uuid[], ?::boolean[], ?::timestamptz[]) as v(device_id, geofence_id, inside, observed_at)
      where exists (select 1 from tracking_geofence g where g.id = v.geofence_id)
     on conflict (device_id, geofence_id) do update set inside = excluded.inside, observed_at = excluded.observed_at`,
    [states.map((s) => s.deviceId), states.map((s) => s.geofenceId), states.map((s) => s.inside), states.map((s) => s.observedAt.toISOString())],
  );
}

const alertInsertColumns = `id, device_id, asset_id, observation_id, latitude, longitude, occurred_at, acknowledged, created_at`;
const alertUnnestTypes = `?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::float8[], ?::float8[], ?::timestamptz[], ?::boolean[], ?::timestamptz[]`;
const alertBindings = (rows: (SpeedAlertRow | BreachRow)[]) => [
  rows.map((r) => r.id),
  rows.map((r) => r.deviceId),
  rows.map((r) => r.assetId),
  rows.map((r) => r.observationId),
  rows.map((r) => r.latitude),
  rows.map((r) => r.longitude),
  rows.map((r) => r.occurredAt.toISOString()),
  rows.map((r) => r.acknowledged),
  rows.map((r) => r.createdAt.toISOString()),
];

async function insertSpeedAlerts(q: Query, rows: SpeedAlertRow[]): Promise<void> {
  if (!rows.length) return;
  await q(
    `insert into tracking_speed_alert (${alertInsertColumns}, speed_kmh, threshold_kmh)
     select * from unnest(${alertUnnestTypes}, ?::float8[], ?::float8[])`,
    [...alertBindings(rows), rows.map((r) => r.speedKmh), rows.map((r) => r.thresholdKmh)],
  );
}

async function insertBreaches(q: Query, rows: BreachRow[]): Promise<void> {
  if (!rows.length) return;
  await q(
    `insert into tracking_geofence_breach (${alertInsertColumns}, geofence_id, breach_event_type)
     select * from unnest(${alertUnnestTypes}, ?::uuid[], ?::text[])`,
    [...alertBindings(rows), rows.map((r) => r.geofenceId), rows.map((r) => r.breachEventType)],
  );
}

/** Fills in the stored row of every duplicate that does not have one yet (single path only). */
async function loadDuplicateRows(
  q: Query,
  outcomes: Map<number, ChunkOutcome>,
  items: readonly ChunkItem[],
  devices: Map<string, DeviceState>,
  byIdentifier: Map<string, DeviceState>,
): Promise<void> {
  const wanted = items.filter((i) => {
    const o = outcomes.get(i.index);
    return o?.kind === "duplicate" && !o.observation;
  });
  if (!wanted.length) return;
  const keys = wanted.map((i) => {
    const ref = i.observation.device;
    const device = ref.kind === "id" ? devices.get(ref.id)! : byIdentifier.get(ref.identifier)!;
    return { index: i.index, deviceId: device.id, observedAt: i.observation.observedAt };
  });
  const stored = await q<Record<string, unknown>>(
    `select o.* from tracking_observation o
       join unnest(?::uuid[], ?::timestamptz[]) as k(device_id, observed_at)
         on o.device_id = k.device_id and o.observed_at = k.observed_at`,
    [keys.map((k) => k.deviceId), keys.map((k) => k.observedAt.toISOString())],
  );
  const byKey = new Map(stored.map((s) => [`${s.device_id}|${toDate(s.observed_at).getTime()}`, fromDb(s)]));
  for (const k of keys) {
    const observation = byKey.get(`${k.deviceId}|${k.observedAt.getTime()}`);
    if (observation) outcomes.set(k.index, { kind: "duplicate", observation });
  }
}

/** A tracking_observation row read with raw SQL. */
export function fromDb(s: Record<string, unknown>): ObservationRow {
  return {
    id: String(s.id),
    deviceId: String(s.device_id),
    assetId: (s.asset_id as string | null) ?? null,
    observedAt: toDate(s.observed_at),
    latitude: Number(s.latitude),
    longitude: Number(s.longitude),
    altitude: (s.altitude as number | null) ?? null,
    accuracyMeters: (s.accuracy_meters as number | null) ?? null,
    speedKmh: (s.speed_kmh as number | null) ?? null,
    headingDegrees: (s.heading_degrees as number | null) ?? null,
    metadata: (s.metadata as string | null) ?? null,
    source: String(s.source),
    receivedAt: toDate(s.received_at),
  };
}
