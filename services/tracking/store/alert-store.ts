// Queries shared by the breach and speed-alert tables, which have the same alert columns: the
// filtered newest-first list, its bounded count, the names shown next to a row, acknowledgement.
import { LockMode, type EntitySchema, type FilterQuery } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { AlertFilter } from "../domain/alert-query.js";
import type { AlertNames } from "../mappers/to-message.js";
import type { BreachRow, SpeedAlertRow } from "./alert-entities.js";
import { DeviceEntity } from "./device-entity.js";
import { GeofenceEntity } from "./geofence-entity.js";

export type AlertRow = BreachRow | SpeedAlertRow;

// The order of every list and export; the id breaks ties so pages never overlap or skip rows.
const newestFirst = { occurredAt: "desc", id: "desc" } as const;

function where<Row extends AlertRow>(filter: AlertFilter): FilterQuery<Row> {
  const query: Record<string, unknown> = {};
  if (filter.acknowledged !== undefined) query.acknowledged = filter.acknowledged;
  if (filter.since) query.occurredAt = { $gte: filter.since };
  if (filter.deviceId) query.deviceId = filter.deviceId;
  if (filter.assetId) query.assetId = filter.assetId;
  return query as FilterQuery<Row>;
}

/**
 * How many rows the filter selects, counting no further than `limit`: the answer never needs
 * more, and a count that stops early stays cheap on a table of millions.
 */
export async function countAlerts<Row extends AlertRow>(
  em: EntityManager,
  entity: EntitySchema<Row>,
  filter: AlertFilter,
  limit: number,
): Promise<number> {
  const selected = em.createQueryBuilder(entity).select("id").where(where<Row>(filter)).limit(limit).getKnexQuery();
  const [row] = await em.execute<{ n: string | number }[]>(em.getKnex().count({ n: "*" }).from(selected.as("selected")));
  return Number(row?.n ?? 0);
}

/** `take` rows from `offset` of the filtered rows, newest first. */
export async function findAlerts<Row extends AlertRow>(
  em: EntityManager,
  entity: EntitySchema<Row>,
  filter: AlertFilter,
  offset: number,
  take: number,
): Promise<Row[]> {
  if (take <= 0) return [];
  // The entity's own typing of orderBy is too narrow for a generic row; the keys are shared columns.
  const options = { orderBy: newestFirst, limit: take, offset } as unknown as Parameters<typeof em.find<Row>>[2];
  return em.find(entity, where<Row>(filter), options);
}

/**
 * The device identifier and geofence name of each row, read in one query per table. A name
 * that is gone (a deleted geofence outlives its breaches) is absent.
 */
export async function alertNames(em: EntityManager, rows: readonly AlertRow[]): Promise<(row: AlertRow) => AlertNames> {
  const deviceIds = [...new Set(rows.map((r) => r.deviceId))];
  const geofenceIds = [...new Set(rows.flatMap((r) => ("geofenceId" in r ? [r.geofenceId] : [])))];
  const identifiers = new Map<string, string | null>();
  const geofenceNames = new Map<string, string | null>();
  if (deviceIds.length) {
    for (const d of await em.find(DeviceEntity, { id: { $in: deviceIds } }, { fields: ["id", "identifier"] })) {
      identifiers.set(d.id, d.identifier);
    }
  }
  if (geofenceIds.length) {
    for (const g of await em.find(GeofenceEntity, { id: { $in: geofenceIds } }, { fields: ["id", "name"] })) {
      geofenceNames.set(g.id, g.name);
    }
  }
  return (row) => ({
    deviceIdentifier: identifiers.get(row.deviceId) ?? null,
    geofenceName: "geofenceId" in row ? (geofenceNames.get(row.geofenceId) ?? null) : null,
  });
}

export interface Acknowledgement {
  by: string | null;
  at: Date;
}

/**
 * Acknowledges the listed rows that are still open and answers exactly those. The rows are
 * locked (in id order, so two bulk calls cannot deadlock) and re-checked after any wait, so of
 * two racing acknowledgements only the first writes, and the first acknowledgedBy/At stay.
 * Must run inside a transaction.
 */
export async function acknowledgeAlerts<Row extends AlertRow>(
  em: EntityManager,
  entity: EntitySchema<Row>,
  ids: readonly string[],
  ack: Acknowledgement,
): Promise<Row[]> {
  if (!ids.length) return [];
  const open = { id: { $in: [...ids] }, acknowledged: false } as unknown as FilterQuery<Row>;
  const options = { lockMode: LockMode.PESSIMISTIC_WRITE, orderBy: { id: "asc" } } as unknown as Parameters<typeof em.find<Row>>[2];
  const rows = await em.find(entity, open, options);
  for (const row of rows) {
    row.acknowledged = true;
    row.acknowledgedBy = ack.by;
    row.acknowledgedAt = ack.at;
  }
  return rows;
}

/**
 * Acknowledges one row: null when it does not exist, otherwise the row and whether this call
 * changed it (false when it was already acknowledged, which keeps the first acknowledgement).
 * Must run inside a transaction.
 */
export async function acknowledgeAlert<Row extends AlertRow>(
  em: EntityManager,
  entity: EntitySchema<Row>,
  id: string,
  ack: Acknowledgement,
): Promise<{ row: Row; changed: boolean } | null> {
  const [changed] = await acknowledgeAlerts(em, entity, [id], ack);
  if (changed) return { row: changed, changed: true };
  const row = await em.findOne(entity, { id } as FilterQuery<Row>);
  return row ? { row, changed: false } : null;
}
