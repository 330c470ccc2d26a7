// The list and acknowledge handlers that breaches and speed alerts share, written once and
// parameterised by the kind of alert: its table, its message, its CSV columns and its event.
import type { Message } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { EntitySchema } from "@mikro-orm/core";
import type { AcknowledgeRequest, BulkAcknowledgeRequest, ListAlertsRequest } from "../../gen/tracking/v1/breach_pb.js";
import { invalidArgument, notFound, requireUuid, type Checked } from "../runtime/errors/index.js";
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
import type { Transaction } from "../runtime/outbox/index.js";
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
  recordAcknowledged(tx: Transaction, alert: Msg): void;
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
  /** Messages of rows this call acknowledged, each recorded as an event. */
  async function recordAcknowledged(tx: Transaction, rows: Row[]): Promise<Msg[]> {
    const names = await alertNames(tx.em, rows);
    return rows.map((row) => {
      const alert = kind.toMessage(row, names(row));
      kind.recordAcknowledged(tx, alert);
      return alert;
    });
  }

  return {
    /** Newest first; json answers a page within the limit, csv every selected row as a file. */
    async list(req: ListAlertsRequest, ctx: HandlerContext): Promise<AlertPageInit<Msg>> {
      const query = valid(resolveAlertQuery(req));
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
      const by = valid(resolveAcknowledgedBy(req.acknowledgedBy));
      return deps.uow.run(async (tx) => {
        const result = await acknowledgeAlert(tx.em, kind.entity, id, { by, at: new Date() });
        if (!result) throw notFound(`${kind.noun} ${id} not found`);
        if (result.changed) return (await recordAcknowledged(tx, [result.row]))[0]!;
        const names = await alertNames(tx.em, [result.row]);
        return kind.toMessage(result.row, names(result.row));
      });
    },

    /** Counts only the alerts this call changed; unknown and already acknowledged ids count 0. */
    async bulkAcknowledge(req: BulkAcknowledgeRequest): Promise<{ count: number }> {
      const ids = valid(resolveBulkIds(req.ids));
      const by = valid(resolveAcknowledgedBy(req.acknowledgedBy));
      if (!ids.length) return { count: 0 };
      const count = await deps.uow.run(async (tx) => {
        const rows = await acknowledgeAlerts(tx.em, kind.entity, ids, { by, at: new Date() });
        await recordAcknowledged(tx, rows);
        return rows.length;
      });
      return { count };
    },
  };
}

/** The checked value, or InvalidArgument naming every violation. */
function valid<T>(checked: Checked<T>): T {
  if (!checked.ok) throw invalidArgument(checked.violations);
  return checked.value;
}
