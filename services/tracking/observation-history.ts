// ObservationService.GetObservationHistory: filtered history as a JSON page (newest first) or as
// a csv, geojson or gpx file of every matching row (oldest first) up to Tracking:ExportMaxRows.
import { IsolationLevel } from "@mikro-orm/core";
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import { invalidArgument } from "../runtime/errors/index.js";
import { resolvePage } from "../runtime/validation/index.js";
import { attachment } from "./exports/export-format.js";
import { checkHistoryRequest } from "./exports/history-query.js";
import { countHistory, historyPage, historyPoints } from "./store/history-queries.js";
import { writeObservationFile } from "./exports/observation-export.js";
import { toObservation } from "./mappers/to-message.js";
import type { TrackingDeps } from "./deps.js";

export function observationHistory(deps: TrackingDeps): Pick<ServiceImpl<typeof ObservationService>, "getObservationHistory"> {
  return {
    async getObservationHistory(req, ctx) {
      const { filter, format, violations } = checkHistoryRequest({
        deviceId: req.deviceId,
        assetId: req.assetId,
        from: req.from && timestampDate(req.from),
        to: req.to && timestampDate(req.to),
        format: req.format,
      });
      if (violations.length) throw invalidArgument(violations);
      // Checked for files too, so a bad pageSize is a 400 whatever the format; files ignore it.
      const page = resolvePage({ page: req.page, pageSize: req.pageSize });

      if (format === "json") {
        const { rows, total } = await historyPage(deps.db.em(), filter, page.pageSize, page.offset);
        return { items: rows.map(toObservation), totalCount: Number(total), page: page.page, pageSize: page.pageSize };
      }

      const max = deps.settings.tracking.exportMaxRows;
      // One snapshot: the count and every batch of rows see the same data, so the file and its
      // truncation headers agree even while observations keep arriving.
      const { total, file } = await deps.db.em().transactional(
        async (tx) => {
          const total = await countHistory(tx, filter);
          const file = await writeObservationFile(format, historyPoints(tx, filter, max), new Date());
          return { total, file };
        },
        { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
      );
      ctx.responseHeader.set("content-disposition", attachment(file.fileName));
      if (total > file.count) {
        // Never silently short: the client learns the file is capped and how much it missed.
        ctx.responseHeader.set("x-export-truncated", "true");
        ctx.responseHeader.set("x-export-total-count", String(total));
      }
      return { totalCount: Number(total), export: { contentType: file.contentType, data: file.data } };
    },
  };
}
