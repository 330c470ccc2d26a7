// tracking.v1.AssetService handlers: check input, change rows and record the event in one
// transaction, answer the resource. Rules live in domain/, storage in store/.
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/core";
import { randomUUID } from "node:crypto";
import type { AssetInput, AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { AssetCreatedSchema, AssetDeletedSchema, AssetUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { invalidArgument, notFound, requireUuid, unprocessable } from "../runtime/errors/index.js";
import { checkAssetInput } from "./domain/asset-rules.js";
import { recordTrackingEvent } from "./events/record-tracking-event.js";
import { subjects } from "./events/subjects.js";
import { toAsset } from "./mappers/to-message.js";
import { AssetEntity, type AssetRow } from "./store/asset-entity.js";
import type { TrackingDeps } from "./deps.js";

type AssetEventSchema = typeof AssetCreatedSchema | typeof AssetUpdatedSchema | typeof AssetDeletedSchema;

export function assetService(deps: TrackingDeps): ServiceImpl<typeof AssetService> {
  /** Runs a change and its events in one transaction, then wakes the outbox relay. */
  async function change<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    const result = await deps.db.em().transactional(work);
    deps.outbox.notify();
    return result;
  }

  const event = (em: EntityManager, subject: string, schema: AssetEventSchema, row: AssetRow) =>
    recordTrackingEvent(em, subject, schema, { asset: toAsset(row) });

  return {
    async listAssets() {
      const rows = await deps.db.em().find(AssetEntity, {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { items: rows.map(toAsset) };
    },

    async getAsset(req) {
      const id = requireUuid("id", req.id);
      const row = await deps.db.reads.byId(AssetEntity, id);
      if (!row) throw notFound(`asset ${id} not found`);
      return toAsset(row);
    },

    async createAsset(req) {
      const fields = checkedFields(req.asset);
      const now = new Date();
      const row: AssetRow = { id: randomUUID(), ...fields, isSeeded: false, createdAt: now, updatedAt: now };
      await change(async (em) => {
        em.create(AssetEntity, row);
        event(em, subjects.assetCreated, AssetCreatedSchema, row);
      });
      return toAsset(row);
    },

    async updateAsset(req) {
      const id = requireUuid("id", req.id);
      const fields = checkedFields(req.asset);
      const row = await change(async (em) => {
        const found = await load(em, id);
        em.assign(found, { ...fields, updatedAt: new Date() });
        event(em, subjects.assetUpdated, AssetUpdatedSchema, found);
        return found;
      });
      return toAsset(row);
    },

    async deleteAsset(req) {
      const id = requireUuid("id", req.id);
      await change(async (em) => {
        const found = await load(em, id);
        event(em, subjects.assetDeleted, AssetDeletedSchema, found);
        em.remove(found);
      });
      return { id, deleted: true };
    },
  };
}

function checkedFields(input: AssetInput | undefined) {
  if (!input) throw invalidArgument([{ field: "asset", description: "is required" }], "request body is required");
  const { fields, malformed, semantic } = checkAssetInput(input);
  if (malformed.length) throw invalidArgument(malformed);
  if (semantic.length) throw unprocessable(semantic);
  return fields;
}

async function load(em: EntityManager, id: string): Promise<AssetRow> {
  const row = await em.findOne(AssetEntity, { id });
  if (!row) throw notFound(`asset ${id} not found`);
  return row;
}
