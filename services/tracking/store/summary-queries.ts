// Counts behind the summary answers (a device's summary, the alerts summary), each one statement.
import type { EntityManager } from "@mikro-orm/postgresql";

export interface DeviceCounts {
  observations: number;
  openBreaches: number;
  openSpeedAlerts: number;
}

export async function deviceCounts(em: EntityManager, deviceId: string): Promise<DeviceCounts> {
  const [counts] = await em.execute<{ observations: string; breaches: string; speed_alerts: string }[]>(
    `select
       (select count(*) from "tracking_observation" where "device_id" = ?) as "observations",
       (select count(*) from "tracking_geofence_breach" where "device_id" = ? and not "acknowledged") as "breaches",
       (select count(*) from "tracking_speed_alert" where "device_id" = ? and not "acknowledged") as "speed_alerts"`,
    [deviceId, deviceId, deviceId],
  );
  // count(*) is a bigint, which pg hands back as a string.
  return {
    observations: Number(counts!.observations),
    openBreaches: Number(counts!.breaches),
    openSpeedAlerts: Number(counts!.speed_alerts),
  };
}

export interface AlertCounts {
  open: number;
  total: number;
  last24h: number;
}

/** Open, total and last-24-hours counts of breaches and of speed alerts. */
export async function alertCounts(em: EntityManager): Promise<{ breaches: AlertCounts; speedAlerts: AlertCounts }> {
  // One statement, one row per table; the partial "open" indexes serve the unacknowledged counts.
  const counts = (table: string, kind: string) => `select '${kind}' as "kind",
      count(*) filter (where not "acknowledged") as "open",
      count(*) as "total",
      count(*) filter (where "occurred_at" >= now() - interval '24 hours') as "last24h"
    from "${table}"`;
  const rows = await em.execute<{ kind: string; open: string | number; total: string | number; last24h: string | number }[]>(
    `${counts("tracking_geofence_breach", "breach")} union all ${counts("tracking_speed_alert", "speed")}`,
  );
  const of = (kind: string): AlertCounts => {
    const row = rows.find((r) => r.kind === kind);
    return { open: Number(row?.open ?? 0), total: Number(row?.total ?? 0), last24h: Number(row?.last24h ?? 0) };
  };
  return { breaches: of("breach"), speedAlerts: of("speed") };
}
