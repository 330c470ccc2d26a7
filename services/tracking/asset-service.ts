// tracking.v1.AssetService handlers: check input, change rows and record the event in one
// transaction, answer the resource. Rules live in domain/, storage in store/.
import type { ServiceImpl } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import type { AssetInput, AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { AssetCreatedSchema, AssetDeletedSchema, AssetUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { invalidArgument, notFound, requireUuid, unprocessable } from "../runtime/errors/index.js";
import { checkAssetInput } from "./domain/asset-rules.js";
import { toAsset } from "./mappers/to-message.js";
import type { EntityManager } from "@mikro-orm/core";
import { AssetEntity, type AssetRow } from "./store/asset-entity.js";
import type { TrackingDeps } from "./deps.js";

export function assetService(deps: TrackingDeps): ServiceImpl<typeof AssetService> {
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
      await deps.uow.run(async (tx) => {
        tx.em.create(AssetEntity, row);
        tx.record(AssetCreatedSchema, { asset: toAsset(row) });
      });
      return toAsset(row);
    },

    async updateAsset(req) {
      const id = requireUuid("id", req.id);
      const fields = checkedFields(req.asset);
      const row = await deps.uow.run(async (tx) => {
        const found = await load(tx.em, id);
        tx.em.assign(found, { ...fields, updatedAt: new Date() });
        tx.record(AssetUpdatedSchema, { asset: toAsset(found) });
        return found;
      });
      return toAsset(row);
    },

    async deleteAsset(req) {
      const id = requireUuid("id", req.id);
      await deps.uow.run(async (tx) => {
        const found = await load(tx.em, id);
        tx.record(AssetDeletedSchema, { asset: toAsset(found) });
        tx.em.remove(found);
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
