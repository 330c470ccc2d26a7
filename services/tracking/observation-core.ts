// ObservationService: recording (create, ingest, the gRPC bulk paths) and reading (recent page,
// a device's latest, one latest position per device). Recording rules live in the engine.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { BatchIngestObservationsResponseSchema, ObservationInput, ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import { invalidArgument, notFound, requireUuid } from "../runtime/errors/index.js";
import { resolvePage } from "../runtime/validation/index.js";
import type { TrackingDeps } from "./deps.js";
import type { ObservationSource } from "./domain/observation-types.js";
import type { BatchRecordResult } from "./ingest/types.js";
import { chunkSize } from "./ingest/recorder.js";
import { toObservation } from "./mappers/to-message.js";
import { ObservationEntity } from "./store/observation-entity.js";
import { latestPositions } from "./store/observation-queries.js";

type CoreRpcs =
  | "listObservations"
  | "createObservation"
  | "ingestObservation"
  | "getLatestObservation"
  | "listLatestPositions"
  | "batchIngestObservations"
  | "streamIngestObservations";

export function observationCore(deps: TrackingDeps): Pick<ServiceImpl<typeof ObservationService>, CoreRpcs> {
  async function record(input: ObservationInput | undefined, source: ObservationSource, resolveIdentifier: boolean) {
    if (!input) throw invalidArgument([{ field: "observation", description: "is required" }], "request body is required");
    const { observation } = await deps.engine.record(input, { source, resolveIdentifier });
    return toObservation(observation);
  }

  return {
    async listObservations(req) {
      const { page, pageSize, offset } = resolvePage({ page: req.page, pageSize: req.pageSize });
      const em = deps.db.em();
      const rows = await em.find(ObservationEntity, {}, { orderBy: { observedAt: "desc", id: "desc" }, limit: pageSize, offset });
      const total = await em.count(ObservationEntity, {});
      return { items: rows.map(toObservation), totalCount: Number(total), page, pageSize };
    },

    createObservation: (req) => record(req.observation, "api", false),

    ingestObservation: (req) => record(req.observation, "ingest", true),

    async getLatestObservation(req) {
      const deviceId = requireUuid("device_id", req.deviceId);
      const row = await deps.db.em().findOne(ObservationEntity, { deviceId }, { orderBy: { observedAt: "desc", id: "desc" } });
      if (!row) throw notFound(`device ${deviceId} has no observations`);
      return toObservation(row);
    },

    async listLatestPositions() {
      const rows = await latestPositions(deps.db.em());
      return {
        items: rows.map((r) => ({
          deviceId: r.deviceId,
          deviceIdentifier: r.identifier ?? undefined,
          deviceLabel: r.label ?? undefined,
          assetId: r.assetId ?? undefined,
          assetName: r.assetName ?? undefined,
          observationId: r.observationId,
          observedAt: timestampFromDate(r.observedAt),
          latitude: r.latitude,
          longitude: r.longitude,
          speedKmh: r.speedKmh ?? undefined,
          headingDegrees: r.headingDegrees ?? undefined,
        })),
      };
    },

    async batchIngestObservations(req) {
      return toResponse(await deps.engine.recordBatch(req.observations, { source: "bulk", resolveIdentifier: true }));
    },

    async streamIngestObservations(requests) {
      // Recorded in chunks as they arrive, so memory stays flat however long the stream runs.
      const total: BatchRecordResult = { accepted: 0, duplicates: 0, rejected: [], speedAlertsRaised: 0, breachesDetected: 0 };
      let buffer: ObservationInput[] = [];
      let seen = 0;
      const flush = async () => {
        if (!buffer.length) return;
        const part = await deps.engine.recordBatch(buffer, { source: "bulk", resolveIdentifier: true, indexOffset: seen - buffer.length });
        buffer = [];
        total.accepted += part.accepted;
        total.duplicates += part.duplicates;
        total.rejected.push(...part.rejected);
        total.speedAlertsRaised += part.speedAlertsRaised;
        total.breachesDetected += part.breachesDetected;
      };
      for await (const item of requests) {
        buffer.push(item);
        seen++;
        if (buffer.length >= chunkSize) await flush();
      }
      await flush();
      return toResponse(total);
    },
  };
}

function toResponse(result: BatchRecordResult): MessageInitShape<typeof BatchIngestObservationsResponseSchema> {
  return {
    accepted: result.accepted,
    duplicates: result.duplicates,
    rejected: result.rejected.map((r) => ({ index: r.index, field: r.field, description: r.description })),
    speedAlertsRaised: result.speedAlertsRaised,
    breachesDetected: result.breachesDetected,
  };
}
