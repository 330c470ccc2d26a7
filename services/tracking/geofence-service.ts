// tracking.v1.GeofenceService handlers: check the body, change the fence and record its event in
// one transaction, then tell this instance's geofence index (other instances hear the event).
import type { ServiceImpl } from "@connectrpc/connect";
import { LockMode, type EntityManager } from "@mikro-orm/core";
import { randomUUID } from "node:crypto";
import { GeofenceCreatedSchema, GeofenceDeletedSchema, GeofenceUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import type { GeofenceInput, GeofenceService } from "../../gen/tracking/v1/geofence_pb.js";
import { invalidArgument, notFound, requireUuid, unprocessable } from "../runtime/errors/index.js";
import type { TrackingDeps } from "./deps.js";
import { checkGeofenceInput } from "./domain/geofence-rule.js";
import { toGeofence } from "./mappers/to-message.js";
import { GeofenceEntity, GeofenceStateEntity, type GeofenceRow } from "./store/geofence-entity.js";

export function geofenceService(deps: TrackingDeps): ServiceImpl<typeof GeofenceService> {
  return {
    async listGeofences() {
      const rows = await deps.db.em().find(GeofenceEntity, {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { items: rows.map(toGeofence) };
    },

    async createGeofence(req) {
      const fields = checkedFields(req.geofence);
      const now = new Date();
      const row: GeofenceRow = { id: randomUUID(), ...fields, isSeeded: false, createdAt: now, updatedAt: now };
      await deps.uow.run(async (tx) => {
        tx.em.create(GeofenceEntity, row);
        tx.record(GeofenceCreatedSchema, { geofence: toGeofence(row) });
      });
      deps.engine.applyGeofence(row);
      return toGeofence(row);
    },

    async updateGeofence(req) {
      const id = requireUuid("id", req.id);
      const fields = checkedFields(req.geofence);
      const row = await deps.uow.run(async (tx) => {
        const found = await load(tx.em, id);
        if (found.isActive && !fields.isActive) {
          // Deactivated fences are not evaluated; forgetting who was inside means a reactivated
          // fence starts clean instead of raising Exits for devices that left while it was off.
          await tx.em.nativeDelete(GeofenceStateEntity, { geofenceId: id });
        }
        tx.em.assign(found, { ...fields, updatedAt: new Date() });
        tx.record(GeofenceUpdatedSchema, { geofence: toGeofence(found) });
        return found;
      });
      deps.engine.applyGeofence(row);
      return toGeofence(row);
    },

    async deleteGeofence(req) {
      const id = requireUuid("id", req.id);
      await deps.uow.run(async (tx) => {
        const found = await load(tx.em, id);
        tx.record(GeofenceDeletedSchema, { geofence: toGeofence(found) });
        // Its states go with it (foreign key cascade); its breaches stay, as history.
        tx.em.remove(found);
      });
      deps.engine.removeGeofence(id);
      return { id, deleted: true };
    },
  };
}

function checkedFields(input: GeofenceInput | undefined) {
  if (!input) throw invalidArgument([{ field: "geofence", description: "is required" }], "request body is required");
  const { fields, malformed, semantic } = checkGeofenceInput(input);
  if (malformed.length) throw invalidArgument(malformed);
  if (semantic.length || !fields) throw unprocessable(semantic);
  return fields;
}

/**
 * The fence, row-locked for the rest of the transaction. Locking it before touching its states
 * keeps the lock order the observation engine uses (fence, then states), so the two cannot deadlock.
 */
async function load(em: EntityManager, id: string): Promise<GeofenceRow> {
  const row = await em.findOne(GeofenceEntity, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!row) throw notFound(`geofence ${id} not found`);
  return row;
}
