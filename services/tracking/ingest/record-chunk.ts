// One transaction's worth of observations: lock their devices, insert the rows (duplicates fall
// out through the unique index), evaluate speed and geofence rules in input order against the
// devices' stored state, then write alerts, states and events with multi-row statements.
// A single observation is a chunk of one (or of a few, when concurrent single records share a
// transaction), so the REST path and the bulk path share every rule.
//
// Round trips, each a statement on the transaction's connection:
//   1. lock the devices (and read what the rules need of them);
//   2. insert the observations, and in the same statement read the devices' inside-states, their
//      last speed alert (only devices that go over their threshold) and share-lock the live fences
//      the rules will look at (after 1, so it sees everything committed under those locks);
//   3. last-seen, geofence states, speed alerts, breaches and the events (the outbox's rows), in
//      one statement.
import type { Context } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import { GeofenceBreachDetectedSchema, SpeedAlertRaisedSchema } from "../../../gen/tracking/v1/events_pb.js";
import { evaluateFences } from "../domain/geofence-rule.js";
import type { CheckedObservation, ObservationSource } from "../domain/observation-types.js";
import { cooledDown, judgeThreshold, type ThresholdVerdict } from "../domain/speed-rule.js";
import { toBreach, toSpeedAlert } from "../mappers/to-message.js";
import type { BreachRow, SpeedAlertRow } from "../store/alert-entities.js";
import type { ObservationRow } from "../store/observation-entity.js";
import type { OutboxInsert, Transaction } from "../../runtime/outbox/index.js";
import { EventBatch } from "./event-batch.js";
import type { FenceIndex, IndexedFence } from "./fence-index.js";
import { pgArray, queryOn, toDate, toDateOrNull, type Query } from "../store/sql.js";

export interface ChunkItem {
  /** Position in the caller's input. */
  index: number;
  observation: CheckedObservation;
  /** The trace context of the request that sent it, carried by its events (default: the active one). */
  context?: Context;
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

interface PendingRow {
  item: ChunkItem;
  device: DeviceState;
  row: ObservationRow;
  /** Ids of the fences the index proposes for this fix. */
  near: string[];
  /** The fix against its device's threshold, judged once; the cooldown is applied in input order. */
  speed: ThresholdVerdict;
}

interface StateChange {
  deviceId: string;
  geofenceId: string;
  inside: boolean;
  observedAt: Date;
}

const noFences: readonly string[] = [];

export async function recordChunk(tx: Transaction, items: readonly ChunkItem[], ctx: ChunkContext): Promise<Map<number, ChunkOutcome>> {
  const q = queryOn(tx.em);
  const outcomes = new Map<number, ChunkOutcome>();
  const now = new Date();

  const devices = await lockDevices(q, items);
  const byIdentifier = new Map<string, DeviceState>();
  for (const d of devices.values()) if (d.identifier !== null) byIdentifier.set(d.identifier, d);

  // Rows to insert, deduplicated within the chunk; a repeat points at the first of its key.
  const rows: PendingRow[] = [];
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
    const row = observationRow(item.observation, device, ctx.source, now);
    const speed = judgeThreshold(row.speedKmh, device.assetThresholdKmh, ctx.defaultThresholdKmh);
    rows.push({ item, device, row, near: proposeFences(ctx.index, row), speed });
  }

  const { inserted, live } = await insertAndRead(q, rows);
  const fresh = rows.filter((r) => inserted.has(r.row.id));
  for (const r of rows) {
    if (!inserted.has(r.row.id)) outcomes.set(r.item.index, { kind: "duplicate" });
  }

  // Evaluate in input order: each observation sees the state the previous ones left.
  const speedAlerts: SpeedAlertRow[] = [];
  const breaches: BreachRow[] = [];
  const events = new EventBatch(now);
  const stateChanges = new Map<string, StateChange>();
  for (const { item, device, row, near, speed } of fresh) {
    const found = { speedAlerts: [] as SpeedAlertRow[], breaches: [] as BreachRow[] };
    const inOrder = device.lastSeenAt === null || row.observedAt > device.lastSeenAt;
    if (inOrder) {
      device.lastSeenAt = row.observedAt;
      device.seenMoved = true;

      if (speed.over && cooledDown(row.observedAt, device.lastAlertAt ?? null, ctx.cooldownMs)) {
        device.lastAlertAt = row.observedAt;
        found.speedAlerts.push({ ...alertColumns(row, now), speedKmh: row.speedKmh!, thresholdKmh: speed.thresholdKmh });
      }

      if (near.length || device.inside.size) {
        const fences: IndexedFence[] = [];
        for (const id of near) {
          const fence = live.get(id);
          if (fence) fences.push(fence);
        }
        for (const id of device.inside) {
          const fence = live.get(id);
          if (fence) fences.push(fence);
        }
        for (const t of evaluateFences(row, fences, (id) => device.inside.has(id))) {
          if (t.type === "Enter") device.inside.add(t.fence.id);
          else device.inside.delete(t.fence.id);
          stateChanges.set(`${device.id}|${t.fence.id}`, {
            deviceId: device.id,
            geofenceId: t.fence.id,
            inside: t.type === "Enter",
            observedAt: row.observedAt,
          });
          found.breaches.push({ ...alertColumns(row, now), geofenceId: t.fence.id, breachEventType: t.type });
        }
      }
    }
    speedAlerts.push(...found.speedAlerts);
    breaches.push(...found.breaches);
    outcomes.set(item.index, { kind: "recorded", observation: row, ...found });

    events.addObservationRecorded(row, item.context);
    for (const alert of found.speedAlerts) {
      events.add(SpeedAlertRaisedSchema, { speedAlert: toSpeedAlert(alert, { deviceIdentifier: device.identifier }) }, item.context);
    }
    for (const breach of found.breaches) {
      events.add(
        GeofenceBreachDetectedSchema,
        { breach: toBreach(breach, { deviceIdentifier: device.identifier, geofenceName: live.get(breach.geofenceId)?.name ?? null }) },
        item.context,
      );
    }
  }

  const moved: DeviceState[] = [];
  for (const d of devices.values()) if (d.seenMoved) moved.push(d);
  await writeOutcomes(q, moved, [...stateChanges.values()], speedAlerts, breaches, events.inserts(tx));

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
  for (const {
    observation: { device },
  } of items) {
    if (device.kind === "id") ids.add(device.id);
    else identifiers.add(device.identifier);
  }
  const found = await q<{
    id: string;
    identifier: string | null;
    asset_id: string | null;
    last_seen_at: unknown;
    speed_threshold_kmh: number | null;
  }>(
    `select d.id, d.identifier, d.asset_id, d.last_seen_at, a.speed_threshold_kmh
       from tracking_device d left join tracking_asset a on a.id = d.asset_id
      where d.id = any(?::uuid[]) or d.identifier = any(?::text[])
      order by d.id
        for update of d`,
    [pgArray.uuids([...ids]), pgArray.texts([...identifiers])],
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

/** The fences whose box holds the fix: a superset of those that contain it. */
function proposeFences(index: FenceIndex, row: ObservationRow): string[] {
  if (!index.size) return noFences as string[];
  const near = index.candidates(row.latitude, row.longitude);
  return near.length ? near.map((f) => f.id) : (noFences as string[]);
}

/** One row of statement 2: k says which part it comes from (0 inserted, 1 inside-state, 2 last alert, 3 live fence). */
interface ReadRow {
  k: number;
  a: string;
  b: string;
  t: unknown;
  name: string | null;
  x: number;
  y: number;
  r: number;
}

/**
 * Statement 2. Inserts with `on conflict do nothing` (a concurrent duplicate is skipped, not an
 * error) and answers the ids written. With them, after the device locks of statement 1:
 * - the inside-states of the chunk's devices;
 * - the newest speed alert of each device with a fix over its threshold (the cooldown needs it);
 * - the live fences the rules may touch. The index proposes fences near each fix; the database
 *   decides. Those, plus the fences the devices are inside (to notice a device leaving one that is
 *   now far away or was moved), are read back if still active, with their current shape, and
 *   share-locked so that no instance deactivates or deletes one while this chunk writes states for
 *   it. So a stale index can delay a new fence, but never evaluates a deleted, deactivated or
 *   outdated one. The ids go in as one array (`id = any(...)`) so that the planner looks them up
 *   by primary key: written as `id in (select unnest(...) ...)` it hash-joined a sequential scan
 *   of every fence, most of the statement's time with 10,000 fences.
 */
async function insertAndRead(q: Query, pending: PendingRow[]): Promise<{ inserted: Set<string>; live: Map<string, IndexedFence> }> {
  const inserted = new Set<string>();
  const live = new Map<string, IndexedFence>();
  if (!pending.length) return { inserted, live };

  const deviceIds = new Set<string>();
  const speeding = new Set<string>();
  const near = new Set<string>();
  for (const { device, near: ids, speed } of pending) {
    deviceIds.add(device.id);
    for (const id of ids) near.add(id);
    if (speed.over) speeding.add(device.id);
  }
  const rows = pending.map((p) => p.row);
  const read = await q<ReadRow>(readSql(speeding.size > 0), [
    pgArray.uuids(rows.map((r) => r.id)),
    pgArray.uuids(rows.map((r) => r.deviceId)),
    pgArray.uuids(rows.map((r) => r.assetId)),
    pgArray.times(rows.map((r) => r.observedAt)),
    pgArray.numbers(rows.map((r) => r.latitude)),
    pgArray.numbers(rows.map((r) => r.longitude)),
    pgArray.numbers(rows.map((r) => r.altitude)),
    pgArray.numbers(rows.map((r) => r.accuracyMeters)),
    pgArray.numbers(rows.map((r) => r.speedKmh)),
    pgArray.numbers(rows.map((r) => r.headingDegrees)),
    pgArray.texts(rows.map((r) => r.metadata)),
    pgArray.texts(rows.map((r) => r.source)),
    pgArray.times(rows.map((r) => r.receivedAt)),
    pgArray.uuids([...deviceIds]),
    // Only devices over their threshold need their last alert; usually none.
    ...(speeding.size ? [pgArray.uuids([...speeding])] : []),
    pgArray.uuids([...near]),
  ]);
  const devices = new Map(pending.map((p) => [p.device.id, p.device]));
  for (const id of speeding) devices.get(id)!.lastAlertAt = null;
  for (const r of read) {
    switch (Number(r.k)) {
      case 0:
        inserted.add(r.a);
        break;
      case 1:
        devices.get(r.a)?.inside.add(r.b);
        break;
      case 2:
        devices.get(r.a)!.lastAlertAt = toDateOrNull(r.t);
        break;
      case 3:
        live.set(r.a, { id: r.a, name: r.name, centerLatitude: r.x, centerLongitude: r.y, radiusMeters: r.r });
        break;
    }
  }
  return { inserted, live };
}

/**
 * The text of statement 2. Bindings, in order: the 13 observation column arrays, the chunk's device
 * ids, the ids of the devices over their threshold (only `withLastAlert`), the proposed fence ids.
 */
export function readSql(withLastAlert: boolean): string {
  const lastAlert = withLastAlert
    ? {
        cte: ` la as (
       select device_id, max(occurred_at) as last from tracking_speed_alert where device_id = any(?::uuid[]) group by device_id
     ),`,
        select: `
     union all select 2, device_id, null, last, null, null, null, null from la`,
      }
    : { cte: "", select: "" };
  return `with ins as (
       insert into tracking_observation
         (id, device_id, asset_id, observed_at, latitude, longitude, altitude, accuracy_meters, speed_kmh, heading_degrees, metadata, source, received_at)
       select * from unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::timestamptz[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::float8[], ?::text[], ?::text[], ?::timestamptz[])
       on conflict (device_id, observed_at) do nothing
       returning id
     ), st as (
       select device_id, geofence_id from tracking_geofence_state where device_id = any(?::uuid[]) and inside
     ),${lastAlert.cte} f as (
       select g.id, g.name, g.center_latitude, g.center_longitude, g.radius_meters
         from tracking_geofence g
        where g.id = any(?::uuid[] || array(select geofence_id from st)) and g.is_active
        order by g.id
          for share of g
     )
     select 0 as k, id as a, null::uuid as b, null::timestamptz as t, null::text as name, null::float8 as x, null::float8 as y, null::float8 as r from ins
     union all select 1, device_id, geofence_id, null, null, null, null, null from st${lastAlert.select}
     union all select 3, id, null, null, name, center_latitude, center_longitude, radius_meters from f`;
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

const alertInsertColumns = `id, device_id, asset_id, observation_id, latitude, longitude, occurred_at, acknowledged, created_at`;
const alertUnnestTypes = `?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::float8[], ?::float8[], ?::timestamptz[], ?::boolean[], ?::timestamptz[]`;
const alertBindings = (rows: (SpeedAlertRow | BreachRow)[]) => [
  pgArray.uuids(rows.map((r) => r.id)),
  pgArray.uuids(rows.map((r) => r.deviceId)),
  pgArray.uuids(rows.map((r) => r.assetId)),
  pgArray.uuids(rows.map((r) => r.observationId)),
  pgArray.numbers(rows.map((r) => r.latitude)),
  pgArray.numbers(rows.map((r) => r.longitude)),
  pgArray.times(rows.map((r) => r.occurredAt)),
  pgArray.booleans(rows.map((r) => r.acknowledged)),
  pgArray.times(rows.map((r) => r.createdAt)),
];

/**
 * Statement 3: the devices' lastSeenAt (only ever forward), the changed inside-states, speed
 * alerts, breaches and the outbox rows of the chunk's events, each a multi-row part of one
 * statement. Only the parts with rows are sent (a single observation usually has the first and
 * the outbox), which keeps planning short.
 */
async function writeOutcomes(
  q: Query,
  moved: DeviceState[],
  states: StateChange[],
  speedAlerts: SpeedAlertRow[],
  breaches: BreachRow[],
  outbox: readonly OutboxInsert[],
): Promise<void> {
  const parts: { sql: string; bindings: readonly unknown[] }[] = [];
  if (moved.length) {
    parts.push({
      sql: `update tracking_device d set last_seen_at = v.seen
              from unnest(?::uuid[], ?::timestamptz[]) as v(id, seen)
             where d.id = v.id and (d.last_seen_at is null or d.last_seen_at < v.seen)`,
      bindings: [pgArray.uuids(moved.map((d) => d.id)), pgArray.times(moved.map((d) => d.lastSeenAt))],
    });
  }
  if (states.length) {
    // The exists() keeps a fence deleted elsewhere (and not yet gone from this index) from failing the chunk.
    parts.push({
      sql: `insert into tracking_geofence_state (device_id, geofence_id, inside, observed_at)
            select v.device_id, v.geofence_id, v.inside, v.observed_at
              from unnest(?::uuid[], ?::uuid[], ?::boolean[], ?::timestamptz[]) as v(device_id, geofence_id, inside, observed_at)
             where exists (select 1 from tracking_geofence g where g.id = v.geofence_id)
            on conflict (device_id, geofence_id) do update set inside = excluded.inside, observed_at = excluded.observed_at`,
      bindings: [
        pgArray.uuids(states.map((s) => s.deviceId)),
        pgArray.uuids(states.map((s) => s.geofenceId)),
        pgArray.booleans(states.map((s) => s.inside)),
        pgArray.times(states.map((s) => s.observedAt)),
      ],
    });
  }
  if (speedAlerts.length) {
    parts.push({
      sql: `insert into tracking_speed_alert (${alertInsertColumns}, speed_kmh, threshold_kmh)
            select * from unnest(${alertUnnestTypes}, ?::float8[], ?::float8[])`,
      bindings: [
        ...alertBindings(speedAlerts),
        pgArray.numbers(speedAlerts.map((r) => r.speedKmh)),
        pgArray.numbers(speedAlerts.map((r) => r.thresholdKmh)),
      ],
    });
  }
  if (breaches.length) {
    parts.push({
      sql: `insert into tracking_geofence_breach (${alertInsertColumns}, geofence_id, breach_event_type)
            select * from unnest(${alertUnnestTypes}, ?::uuid[], ?::text[])`,
      bindings: [
        ...alertBindings(breaches),
        pgArray.uuids(breaches.map((r) => r.geofenceId)),
        pgArray.texts(breaches.map((r) => r.breachEventType)),
      ],
    });
  }
  // The relay publishes in insertion order. One insert rides along; the parts of a statement run
  // in no set order, so the rare chunk with more events than one insert holds writes the rest after.
  const ridesAlong = outbox.length === 1;
  if (ridesAlong) parts.push(outbox[0]!);
  const after = ridesAlong ? [] : outbox;
  if (!parts.length) {
    for (const insert of after) await q(insert.sql, insert.bindings);
    return;
  }
  if (parts.length === 1) {
    await q(parts[0]!.sql, parts[0]!.bindings);
  } else {
    // Data-modifying WITH parts all run, referenced or not.
    await q(
      `with ${parts.map((p, i) => `w${i} as (${p.sql})`).join(", ")} select 1`,
      parts.flatMap((p) => p.bindings),
    );
  }
  for (const insert of after) await q(insert.sql, insert.bindings);
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
    [pgArray.uuids(keys.map((k) => k.deviceId)), pgArray.times(keys.map((k) => k.observedAt))],
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
