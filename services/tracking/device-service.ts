// tracking.v1.DeviceService handlers: check the body, verify what it references, change the row
// and record its event in one transaction, answer the device. Rules live in domain/device-rules.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { randomUUID } from "node:crypto";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { DeviceSummarySchema, type DeviceInput, type DeviceService } from "../../gen/tracking/v1/device_pb.js";
import { DeviceCreatedSchema, DeviceDeletedSchema, DeviceUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { alreadyExists, invalidArgument, notFound, requireUuid } from "../runtime/errors/index.js";
import { checkDeviceInput, deviceFieldPath, type DeviceFields } from "./domain/device-rules.js";
import { toAsset, toDevice, toObservation } from "./mappers/to-message.js";
import { AssetEntity } from "./store/asset-entity.js";
import { DeviceEntity, type DeviceRow } from "./store/device-entity.js";
import { IntegrationFeedEntity } from "./store/integration-feed-entity.js";
import { ObservationEntity } from "./store/observation-entity.js";
import { deviceCounts } from "./store/summary-queries.js";
import type { Transaction } from "../runtime/outbox/index.js";
import type { TrackingDeps } from "./deps.js";

/** The partial unique index that makes identifiers unique even between racing requests. */
const identifierIndex = "tracking_device_identifier_uq";

export function deviceService(deps: TrackingDeps): ServiceImpl<typeof DeviceService> {
  /** A unit of work whose lost race for an identifier answers 409 like the checked case. */
  async function change<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    try {
      return await deps.uow.run(work);
    } catch (err) {
      // Two requests can both pass the duplicate check; the index lets only one commit.
      if (err instanceof UniqueConstraintViolationException && err.message.includes(identifierIndex)) {
        throw duplicateIdentifier();
      }
      throw err;
    }
  }

  return {
    async listDevices() {
      const rows = await deps.db.em().find(DeviceEntity, {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { items: rows.map(toDevice) };
    },

    async getDevice(req) {
      const id = requireUuid("id", req.id);
      const row = await deps.db.reads.byId(DeviceEntity, id);
      if (!row) throw notFound(`device ${id} not found`);
      return toDevice(row);
    },

    async createDevice(req) {
      const fields = checkedFields(req.device);
      const now = new Date();
      const row: DeviceRow = { id: randomUUID(), ...fields, lastSeenAt: null, isSeeded: false, createdAt: now, updatedAt: now };
      await change(async (tx) => {
        await checkReferences(tx.em, fields, null);
        tx.em.create(DeviceEntity, row);
        tx.record(DeviceCreatedSchema, { device: toDevice(row) });
      });
      return toDevice(row);
    },

    async updateDevice(req) {
      const id = requireUuid("id", req.id);
      const fields = checkedFields(req.device);
      const row = await change(async (tx) => {
        const found = await load(tx.em, id);
        await checkReferences(tx.em, fields, id);
        tx.em.assign(found, { ...fields, updatedAt: new Date() });
        tx.record(DeviceUpdatedSchema, { device: toDevice(found) });
        return found;
      });
      return toDevice(row);
    },

    async deleteDevice(req) {
      const id = requireUuid("id", req.id);
      await change(async (tx) => {
        const found = await load(tx.em, id);
        // The event carries the device as it was; its observations, breaches, speed alerts and
        // geofence state go with it through the foreign keys' ON DELETE CASCADE.
        tx.record(DeviceDeletedSchema, { device: toDevice(found) });
        tx.em.remove(found);
      });
      return { id, deleted: true };
    },

    async getDeviceSummary(req) {
      const id = requireUuid("id", req.id);
      const em = deps.db.em();
      const device = await load(em, id);
      const asset = device.assetId ? await em.findOne(AssetEntity, { id: device.assetId }) : null;
      const last = await em.findOne(ObservationEntity, { deviceId: id }, { orderBy: { observedAt: "desc", id: "desc" } });
      const counts = await deviceCounts(em, id);
      return create(DeviceSummarySchema, {
        device: toDevice(device),
        asset: asset ? toAsset(asset) : undefined,
        lastPosition: last ? toObservation(last) : undefined,
        observationCount: counts.observations,
        openBreachCount: counts.openBreaches,
        openSpeedAlertCount: counts.openSpeedAlerts,
      });
    },
  };
}

function checkedFields(input: DeviceInput | undefined): DeviceFields {
  if (!input) throw invalidArgument([{ field: "device", description: "is required" }], "request body is required");
  const { fields, malformed } = checkDeviceInput(input);
  if (malformed.length) throw invalidArgument(malformed);
  return fields;
}

/** Unknown asset or feed → 404 naming the field; an identifier another device holds → 409. */
async function checkReferences(em: EntityManager, fields: DeviceFields, selfId: string | null): Promise<void> {
  if (fields.assetId && !(await em.count(AssetEntity, { id: fields.assetId }))) {
    throw missingReference("assetId", `asset ${fields.assetId} not found`);
  }
  if (fields.integrationFeedId && !(await em.count(IntegrationFeedEntity, { id: fields.integrationFeedId }))) {
    throw missingReference("integrationFeedId", `integration feed ${fields.integrationFeedId} not found`);
  }
  if (fields.identifier !== null) {
    const holder = await em.findOne(DeviceEntity, { identifier: fields.identifier }, { fields: ["id"] });
    if (holder && holder.id !== selfId) throw duplicateIdentifier();
  }
}

/** NotFound that still names the field, so a REST client sees which reference was wrong. */
function missingReference(key: "assetId" | "integrationFeedId", message: string): ConnectError {
  const field = deviceFieldPath(key);
  const detail = create(BadRequestSchema, { fieldViolations: [{ field, description: "does not name an existing record" }] });
  return new ConnectError(message, Code.NotFound, undefined, [{ desc: BadRequestSchema, value: detail }]);
}

function duplicateIdentifier(): ConnectError {
  return alreadyExists("another device already has this identifier", [
    { field: deviceFieldPath("identifier"), description: "is already used by another device" },
  ]);
}

async function load(em: EntityManager, id: string): Promise<DeviceRow> {
  const row = await em.findOne(DeviceEntity, { id });
  if (!row) throw notFound(`device ${id} not found`);
  return row;
}
