// Reading observation history: the JSON page through the ORM, the count, and the rows of a file
// export through plain SQL in time order, a batch at a time.
import type { EntityManager } from "@mikro-orm/postgresql";
import { findPage } from "../../runtime/database/index.js";
import type { TrackPoint } from "../domain/track-point.js";
import { ObservationEntity, type ObservationRow } from "./observation-entity.js";

export interface HistoryFilter {
  readonly deviceId?: string;
  readonly assetId?: string;
  readonly from?: Date;
  readonly to?: Date;
}

/** One page, newest first; id breaks ties between equal timestamps so pages never overlap. */
export async function historyPage(
  em: EntityManager,
  filter: HistoryFilter,
  limit: number,
  offset: number,
): Promise<{ rows: ObservationRow[]; total: number }> {
  const where: Record<string, unknown> = {};
  if (filter.deviceId) where.deviceId = filter.deviceId;
  if (filter.assetId) where.assetId = filter.assetId;
  if (filter.from || filter.to) {
    where.observedAt = { ...(filter.from && { $gte: filter.from }), ...(filter.to && { $lte: filter.to }) };
  }
  return findPage(em, ObservationEntity, where, {
    orderBy: { observedAt: "desc", id: "desc" },
    limit,
    offset,
  });
}

interface SqlFilter {
  readonly sql: string;
  readonly params: unknown[];
}

function sqlFilter(filter: HistoryFilter): SqlFilter {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.deviceId) {
    clauses.push(`o."device_id" = ?`);
    params.push(filter.deviceId);
  }
  if (filter.assetId) {
    clauses.push(`o."asset_id" = ?`);
    params.push(filter.assetId);
  }
  if (filter.from) {
    clauses.push(`o."observed_at" >= ?`);
    params.push(filter.from);
  }
  if (filter.to) {
    clauses.push(`o."observed_at" <= ?`);
    params.push(filter.to);
  }
  return { sql: clauses.length ? clauses.join(" and ") : "true", params };
}

/** How many observations match, whatever a page or an export cap would show. */
export async function countHistory(em: EntityManager, filter: HistoryFilter): Promise<number> {
  const where = sqlFilter(filter);
  const rows = await em.execute<{ n: string | number }[]>(
    `select count(*) as n from "tracking_observation" o where ${where.sql}`,
    where.params,
  );
  return Number(rows[0]?.n ?? 0);
}

interface PointRow {
  id: string;
  device_id: string;
  device_identifier: string | null;
  asset_id: string | null;
  observed_at: Date | string;
  latitude: number | string;
  longitude: number | string;
  altitude: number | string | null;
  accuracy_meters: number | string | null;
  speed_kmh: number | string | null;
  heading_degrees: number | string | null;
}

const num = (v: number | string) => (typeof v === "number" ? v : Number(v));
const optNum = (v: number | string | null) => (v === null ? null : num(v));

function toPoint(r: PointRow): TrackPoint {
  return {
    observationId: r.id,
    deviceId: r.device_id,
    deviceIdentifier: r.device_identifier,
    assetId: r.asset_id,
    observedAt: r.observed_at instanceof Date ? r.observed_at : new Date(r.observed_at),
    latitude: num(r.latitude),
    longitude: num(r.longitude),
    altitude: optNum(r.altitude),
    accuracyMeters: optNum(r.accuracy_meters),
    speedKmh: optNum(r.speed_kmh),
    headingDegrees: optNum(r.heading_degrees),
  };
}

const BATCH_ROWS = 2000;

/**
 * The first `max` matching observations, oldest first (id breaking ties), read in batches by
 * keyset so no batch holds more than `batchRows` rows. The cursor is the last row's id: its
 * observed_at is re-read in SQL, so no timestamp precision is lost on the round trip through JS.
 * Run it inside one read-only snapshot transaction for a consistent file.
 */
export async function* historyPoints(
  em: EntityManager,
  filter: HistoryFilter,
  max: number,
  batchRows = BATCH_ROWS,
): AsyncGenerator<TrackPoint> {
  const where = sqlFilter(filter);
  let emitted = 0;
  let after: string | undefined;
  while (emitted < max) {
    const limit = Math.min(batchRows, max - emitted);
    const cursor =
      after === undefined ? "" : ` and (o."observed_at", o."id") > ((select "observed_at" from "tracking_observation" where "id" = ?), ?)`;
    const rows = await em.execute<PointRow[]>(
      `select o."id", o."device_id", d."identifier" as "device_identifier", o."asset_id", o."observed_at",
              o."latitude", o."longitude", o."altitude", o."accuracy_meters", o."speed_kmh", o."heading_degrees"
         from "tracking_observation" o
         left join "tracking_device" d on d."id" = o."device_id"
        where ${where.sql}${cursor}
        order by o."observed_at" asc, o."id" asc
        limit ?`,
      [...where.params, ...(after === undefined ? [] : [after, after]), limit],
    );
    for (const row of rows) yield toPoint(row);
    emitted += rows.length;
    if (rows.length < limit) return;
    after = rows[rows.length - 1]!.id;
  }
}
