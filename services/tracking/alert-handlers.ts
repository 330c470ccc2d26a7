// The list and acknowledge handlers that breaches and speed alerts share, written once and
// parameterised by the kind of alert: its table, its message, its CSV columns and its event.
import type { Message } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { EntitySchema } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { AcknowledgeRequest, BulkAcknowledgeRequest, ListAlertsRequest } from "../../gen/tracking/v1/breach_pb.js";
import { notFound, requireUuid } from "../runtime/errors/index.js";
import {
  capExport,
  exportHeaders,
  exportWindow,
  pageWindow,
  resolveAcknowledgedBy,
  resolveAlertQuery,
  resolveBulkIds,
} from "./domain/alert-query.js";
import { toCsv, type CsvValue } from "./exports/csv.js";
import type { AlertNames } from "./mappers/to-message.js";
import { acknowledgeAlert, acknowledgeAlerts, alertNames, countAlerts, findAlerts, type AlertRow } from "./store/alert-store.js";
import type { TrackingDeps } from "./deps.js";

export interface AlertKind<Row extends AlertRow, Msg extends Message> {
  entity: EntitySchema<Row>;
  /** How NotFound messages name one, e.g. "geofence breach". */
  noun: string;
  /** Download name of the CSV export. */
  filename: string;
  csvHeader: readonly string[];
  csvRow(row: Row, names: AlertNames): CsvValue[];
  toMessage(row: Row, names: AlertNames): Msg;
  /** Records the acknowledged event of one alert in the caller's transaction. */
  recordAcknowledged(em: EntityManager, alert: Msg): void;
}

/** A page as both page messages (GeofenceBreachPage, SpeedAlertPage) are initialised. */
export interface AlertPageInit<Msg> {
  items: Msg[];
  totalCount: number;
  page: number;
  pageSize: number;
  export?: { contentType: string; data: Uint8Array };
}

export function alertHandlers<Row extends AlertRow, Msg extends Message>(deps: TrackingDeps, kind: AlertKind<Row, Msg>) {
  /** Runs a change and its events in one transaction, then wakes the outbox relay. */
  async function change<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    const result = await deps.db.em().transactional(work);
    deps.outbox.notify();
    return result;
  }

  /** Messages of rows this call acknowledged, each recorded as an event. */
  async function recordAcknowledged(em: EntityManager, rows: Row[]): Promise<Msg[]> {
    const names = await alertNames(em, rows);
    return rows.map((row) => {
      const alert = kind.toMessage(row, names(row));
      kind.recordAcknowledged(em, alert);
      return alert;
    });
  }

  return {
    /** Newest first; json answers a page within the limit, csv every selected row as a file. */
    async list(req: ListAlertsRequest, ctx: HandlerContext): Promise<AlertPageInit<Msg>> {
      const query = resolveAlertQuery(req);
      const em = deps.db.em();
      if (query.format === "csv") {
        const window = exportWindow(query.limit, deps.settings.tracking.exportMaxRows);
        const { rows, truncated } = capExport(await findAlerts(em, kind.entity, query.filter, 0, window.take), window.maxRows);
        const names = await alertNames(em, rows);
        for (const [name, value] of Object.entries(exportHeaders(kind.filename, truncated))) ctx.responseHeader.set(name, value);
        const csv = toCsv(
          kind.csvHeader,
          rows.map((row) => kind.csvRow(row, names(row))),
        );
        return {
          items: [],
          totalCount: rows.length,
          page: 1,
          pageSize: rows.length,
          export: { contentType: "text/csv; charset=utf-8", data: new TextEncoder().encode(csv) },
        };
      }
      const { offset, take } = pageWindow(query.limit, query.page);
      const rows = await findAlerts(em, kind.entity, query.filter, offset, take);
      const totalCount = await countAlerts(em, kind.entity, query.filter, query.limit);
      const names = await alertNames(em, rows);
      return {
        items: rows.map((row) => kind.toMessage(row, names(row))),
        totalCount: Number(totalCount),
        page: query.page.page,
        pageSize: query.page.pageSize,
      };
    },

    /** Idempotent: a repeat answers the alert as it stands and records no event. */
    async acknowledge(req: AcknowledgeRequest): Promise<Msg> {
      const id = requireUuid("id", req.id);
      const by = resolveAcknowledgedBy(req.acknowledgedBy);
      return change(async (em) => {
        const result = await acknowledgeAlert(em, kind.entity, id, { by, at: new Date() });
        if (!result) throw notFound(`${kind.noun} ${id} not found`);
        if (result.changed) return (await recordAcknowledged(em, [result.row]))[0]!;
        const names = await alertNames(em, [result.row]);
        return kind.toMessage(result.row, names(result.row));
      });
    },

    /** Counts only the alerts this call changed; unknown and already acknowledged ids count 0. */
    async bulkAcknowledge(req: BulkAcknowledgeRequest): Promise<{ count: number }> {
      const ids = resolveBulkIds(req.ids);
      const by = resolveAcknowledgedBy(req.acknowledgedBy);
      if (!ids.length) return { count: 0 };
      const count = await change(async (em) => {
        const rows = await acknowledgeAlerts(em, kind.entity, ids, { by, at: new Date() });
        await recordAcknowledged(em, rows);
        return rows.length;
      });
      return { count };
    },
  };
}
