// protection.v1.AnalyticsService handlers: time series, trends, summary, heatmap and their CSV and
// PDF exports, counted by SQL from the hourly rollup (protection_event_rollup); no event row is
// read into the process. Scope and visibility: device-events/access.ts.
import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import type { AnalyticsService, TimeseriesRequest } from "../../gen/protection/v1/analytics_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import type { ProtectionDeps } from "./deps.js";
import { organizationDevices, type Scope, scopeOf } from "./device-events/access.js";
import { refusal, validationError } from "./errors.js";
import { organizationRole } from "./relations.js";
import {
  isTimeseriesInterval,
  protectionReportPdf,
  type TimeseriesInterval,
  type TimeseriesPoint,
  TimeseriesRangeError,
  timeseriesBuckets,
  timeseriesCsv,
  timeseriesIntervals,
  zeroFilledSeries,
} from "./reports/index.js";
import { bearerOf } from "./tokens/token-service.js";

const dayMs = 86_400_000;
const TAMPER = `('tamper_attempt', 'bypass_attempt')`;
const bucketOf: Readonly<Record<TimeseriesInterval, string>> = {
  "1h": `"hour"`,
  "1d": `date_trunc('day', "hour", 'UTC')`,
  // PostgreSQL's weeks start on Monday, as the buckets do.
  "1w": `date_trunc('week', "hour", 'UTC')`,
};

interface Series {
  from: Date;
  to: Date;
  interval: TimeseriesInterval;
  buckets: Date[];
}

/** The query's range and buckets, or 400 naming the field. */
function seriesOf(req: { from?: Timestamp | undefined; to?: Timestamp | undefined; interval?: string | undefined }): Series {
  const interval = req.interval ?? "1d";
  if (!isTimeseriesInterval(interval)) {
    throw validationError("interval", `interval must be one of ${timeseriesIntervals.join(", ")}`);
  }
  const { from, to } = rangeOf(req, 30);
  try {
    return { from, to, interval, buckets: timeseriesBuckets(from, to, interval) };
  } catch (err) {
    if (err instanceof TimeseriesRangeError) throw validationError(/buckets/.test(err.message) ? "interval" : "from", err.message);
    throw err;
  }
}

function rangeOf(req: { from?: Timestamp | undefined; to?: Timestamp | undefined }, defaultDays: number): { from: Date; to: Date } {
  const to = req.to ? timestampDate(req.to) : new Date();
  const from = req.from ? timestampDate(req.from) : new Date(to.getTime() - defaultDays * dayMs);
  if (from.getTime() >= to.getTime()) throw validationError("from", "from must be before to");
  return { from, to };
}

async function seriesPoints(em: EntityManager, scope: Scope, series: Series): Promise<TimeseriesPoint[]> {
  const rows = await em.execute<{ bucket: Date; block_count: number; tamper_alerts: number }[]>(
    `select ${bucketOf[series.interval]} as "bucket",
            coalesce(sum("count") filter (where "event_type" = 'block'), 0)::int as "block_count",
            coalesce(sum("count") filter (where "event_type" in ${TAMPER}), 0)::int as "tamper_alerts"
       from "protection_event_rollup"
      where ${scope.rows.where} and "hour" >= ? and "hour" < ? and "event_type" in ('block', 'tamper_attempt', 'bypass_attempt')
      group by 1`,
    [...scope.rows.bindings, series.buckets[0] ?? series.from, series.to],
  );
  return zeroFilledSeries(
    series.buckets,
    rows.map((r) => ({ ...r, bucket: new Date(r.bucket) })),
  );
}

async function summaryOf(em: EntityManager, scope: Scope) {
  const [blocks] = await em.execute<{ total: number; last_at: Date | null }[]>(
    `select coalesce(sum("count"), 0)::int as "total", max("last_at") as "last_at"
       from "protection_event_rollup" where ${scope.rows.where} and "event_type" = 'block'`,
    scope.rows.bindings,
  );
  const [devices] = await em.execute<{ devices: number; active: number; enrollments: number }[]>(
    `select count(*)::int as "devices",
            (count(*) filter (where d."status" = 'active'))::int as "active",
            (count(distinct e."id") filter (where e."status" = 'active'))::int as "enrollments"
       from "protection_device" d left join "protection_enrollment" e on e."id" = d."enrollment_id"
      where ${scope.devices.where}`,
    scope.devices.bindings,
  );
  return {
    deviceCount: devices?.devices ?? 0,
    totalBlocksAllTime: blocks?.total ?? 0,
    activeDevices: devices?.active ?? 0,
    enrollmentsActive: devices?.enrollments ?? 0,
    ...(blocks?.last_at ? { lastBlockAt: timestampFromDate(new Date(blocks.last_at)) } : {}),
  };
}

/** Percent change to 0.1; from 0: 0, or 100 when there is something now. */
function change(now: number, before: number): number {
  if (before === 0) return now > 0 ? 100 : 0;
  return Math.round(((now - before) / before) * 1000) / 10;
}

const attachment = (ctx: HandlerContext, name: string) => {
  ctx.responseHeader.set("content-disposition", `attachment; filename="${name}"`);
  ctx.responseHeader.set("cache-control", "no-store");
};

export function analyticsService(deps: ProtectionDeps): ServiceImpl<typeof AnalyticsService> {
  const callerId = () => bearerOf(currentIdentity()).name;

  async function timeseries(req: TimeseriesRequest) {
    const caller = callerId();
    const series = seriesOf(req);
    const em = deps.db.em();
    const scope = await scopeOf(em, caller, req);
    return { em, scope, series, points: await seriesPoints(em, scope, series) };
  }

  return {
    async getTimeseries(req) {
      const { points } = await timeseries(req);
      return {
        series: points.map((p) => ({
          ...p,
          timestamp: timestampFromDate(p.timestamp),
          blockCount: p.block_count,
          tamperAlerts: p.tamper_alerts,
        })),
      };
    },

    async getTrends(req) {
      const em = deps.db.em();
      const scope = await scopeOf(em, callerId(), req);
      const now = new Date();
      const ago = (days: number) => new Date(now.getTime() - days * dayMs);
      const [row] = await em.execute<{ w0: number; w1: number; m0: number; m1: number }[]>(
        `select coalesce(sum("count") filter (where "hour" >= ?), 0)::int as "w0",
                coalesce(sum("count") filter (where "hour" >= ? and "hour" < ?), 0)::int as "w1",
                coalesce(sum("count") filter (where "hour" >= ?), 0)::int as "m0",
                coalesce(sum("count") filter (where "hour" < ?), 0)::int as "m1"
           from "protection_event_rollup"
          where ${scope.rows.where} and "event_type" = 'block' and "hour" >= ? and "hour" <= ?`,
        [ago(7), ago(14), ago(7), ago(30), ago(30), ...scope.rows.bindings, ago(60), now],
      );
      const [devices] = await em.execute<{ active: number }[]>(
        `select count(*)::int as "active" from "protection_device" d where ${scope.devices.where} and d."status" = 'active'`,
        scope.devices.bindings,
      );
      return {
        blockCountWow: change(row?.w0 ?? 0, row?.w1 ?? 0),
        blockCountMom: change(row?.m0 ?? 0, row?.m1 ?? 0),
        activeDevices: devices?.active ?? 0,
      };
    },

    async getSummary(req) {
      const em = deps.db.em();
      const { deviceCount: _, ...summary } = await summaryOf(em, await scopeOf(em, callerId(), req));
      return summary;
    },

    async getHeatmap(req) {
      const em = deps.db.em();
      const caller = callerId();
      const { from, to } = rangeOf(req, 30);
      const scope = await scopeOf(em, caller, req);
      const rows = await em.execute<{ day: number; hour: number; count: number }[]>(
        `select extract(dow from "hour" at time zone 'UTC')::int as "day", extract(hour from "hour" at time zone 'UTC')::int as "hour",
                sum("count")::int as "count"
           from "protection_event_rollup"
          where ${scope.rows.where} and "event_type" = 'block' and "hour" >= date_trunc('hour', ?::timestamptz, 'UTC') and "hour" < ?
          group by 1, 2`,
        [...scope.rows.bindings, from, to],
      );
      const counts = new Map(rows.map((r) => [r.day * 24 + r.hour, r.count]));
      return {
        heatmap: Array.from({ length: 168 }, (_, i) => ({ day: Math.floor(i / 24), hour: i % 24, count: counts.get(i) ?? 0 })),
      };
    },

    async exportCsv(req, ctx) {
      const { points } = await timeseries(req);
      attachment(ctx, "protection-timeseries.csv");
      return create(HttpBodySchema, { contentType: "text/csv; charset=utf-8", data: new TextEncoder().encode(timeseriesCsv(points)) });
    },

    async exportPdf(req, ctx) {
      const { em, scope, series, points } = await timeseries(req);
      const devices = await em.execute<{ hostname: string; blocks: number; tamper_alerts: number }[]>(
        `select d."hostname",
                coalesce(sum(r."count") filter (where r."event_type" = 'block'), 0)::int as "blocks",
                coalesce(sum(r."count") filter (where r."event_type" in ${TAMPER}), 0)::int as "tamper_alerts"
           from "protection_device" d
           left join "protection_event_rollup" r on r."device_id" = d."id" and r."hour" >= ? and r."hour" < ?
          where ${scope.devices.where}
          group by d."id", d."hostname"
          order by 2 desc, d."hostname", d."id"
          limit 500`,
        [series.buckets[0] ?? series.from, series.to, ...scope.devices.bindings],
      );
      const pdf = await protectionReportPdf({
        period: { from: series.from, to: series.to, interval: series.interval },
        totals: {
          blocks: points.reduce((sum, p) => sum + p.block_count, 0),
          tamper_alerts: points.reduce((sum, p) => sum + p.tamper_alerts, 0),
          devices: devices.length,
        },
        series: points,
        devices,
      });
      attachment(ctx, "protection-report.pdf");
      return create(HttpBodySchema, { contentType: "application/pdf", data: pdf });
    },

    async getOrganizationSummary(req) {
      const em = deps.db.em();
      const caller = callerId();
      const notFound = () => refusal(Code.NotFound, "ORGANIZATION_NOT_FOUND", "No such organization.");
      if (!isUuid(req.orgId)) throw notFound();
      if (!(await organizationRole(em, req.orgId, caller))) throw notFound();
      const summary = await summaryOf(em, organizationDevices(req.orgId));
      return { orgId: req.orgId, ...summary };
    },
  };
}
