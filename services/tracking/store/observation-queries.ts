// Observation reads the ORM does not express well: one newest position per device, and a
// device's newest observation time.
import type { EntityManager } from "@mikro-orm/postgresql";
import { queryOn, toDate } from "./sql.js";

export interface LatestPosition {
  deviceId: string;
  identifier: string | null;
  label: string | null;
  assetId: string | null;
  assetName: string | null;
  observationId: string;
  observedAt: Date;
  latitude: number;
  longitude: number;
  speedKmh: number | null;
  headingDegrees: number | null;
}

interface LatestRow {
  device_id: string;
  identifier: string | null;
  label: string | null;
  asset_id: string | null;
  asset_name: string | null;
  observation_id: string;
  observed_at: unknown;
  latitude: number;
  longitude: number;
  speed_kmh: number | null;
  heading_degrees: number | null;
}

/** Each device's newest observation with its device and asset names, newest first. */
export async function latestPositions(em: EntityManager): Promise<LatestPosition[]> {
  // One index probe per device (the unique (device_id, observed_at desc) index), rather than
  // sorting every observation to find each device's newest.
  const rows = await queryOn(em)<LatestRow>(
    `select d.id as device_id, d.identifier, d.label, d.asset_id, a.name as asset_name,
            o.id as observation_id, o.observed_at, o.latitude, o.longitude, o.speed_kmh, o.heading_degrees
       from tracking_device d
       left join tracking_asset a on a.id = d.asset_id
       join lateral (
         select id, observed_at, latitude, longitude, speed_kmh, heading_degrees
           from tracking_observation
          where device_id = d.id
          order by observed_at desc
          limit 1
       ) o on true
      order by o.observed_at desc, d.id desc`,
  );
  return rows.map((r) => ({
    deviceId: r.device_id,
    identifier: r.identifier,
    label: r.label,
    assetId: r.asset_id,
    assetName: r.asset_name,
    observationId: r.observation_id,
    observedAt: toDate(r.observed_at),
    latitude: r.latitude,
    longitude: r.longitude,
    speedKmh: r.speed_kmh,
    headingDegrees: r.heading_degrees,
  }));
}

/** observedAt of the device's newest stored observation, from the (device_id, observed_at desc) index. */
export async function newestObservedAt(em: EntityManager, deviceId: string): Promise<Date | null> {
  const rows = await em.execute<{ newest: Date | string | null }[]>(
    `select max("observed_at") as "newest" from "tracking_observation" where "device_id" = ?`,
    [deviceId],
  );
  return rows[0]?.newest ? new Date(rows[0].newest) : null;
}
