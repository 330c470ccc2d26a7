// protection.v1.BlocklistAdminService handlers: the admins' blocklist entries and the compile
// that publishes them (the admin role is the contract's, checked before any handler runs).
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { BlocklistAdminService } from "../../gen/protection/v1/blocklist_admin_pb.js";
import {
  BlocklistEntryCreatedSchema,
  BlocklistEntryDeletedSchema,
  BlocklistEntryUpdatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { findPage } from "../runtime/database/find-page.js";
import { isUuid } from "../runtime/errors/index.js";
import type { Transaction } from "../runtime/outbox/index.js";
import { isUniqueViolation } from "./auth-service.js";
import type { BlocklistVersions } from "./blocklist-versions.js";
import type { ProtectionDeps } from "./deps.js";
import { categories, checkDomain, checkOneOf, checkPage, checkText, entryReasons } from "./domain/blocklist-rules.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, refusal, validationError } from "./errors.js";
import { BlocklistEntryEntity, type BlocklistEntryRow } from "./store/blocklist.js";

const NOTES_MAX = 1000;

export const entryNotFound = () => refusal(Code.NotFound, "ENTRY_NOT_FOUND", "No such blocklist entry.");
export const entryExists = () => refusal(Code.AlreadyExists, "ENTRY_ALREADY_EXISTS", "This domain is already on the blocklist.");

export function toEntry(row: BlocklistEntryRow) {
  return {
    id: row.id,
    domain: row.domain,
    reason: row.reason,
    category: row.category,
    ...(row.notes !== null ? { notes: row.notes } : {}),
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  };
}

/** Adds an entry in `tx` (a listed domain: 409 ENTRY_ALREADY_EXISTS at the flush, or found here). */
export async function createEntry(
  tx: Transaction,
  fields: { domain: string; reason: string; category: string; notes: string | null },
  reviewItemId?: string,
): Promise<BlocklistEntryRow> {
  const now = new Date();
  const row: BlocklistEntryRow = { id: uuidv7(now.getTime()), ...fields, createdAt: now, updatedAt: now };
  tx.em.persist(tx.em.create(BlocklistEntryEntity, row));
  await tx.em.flush();
  tx.record(BlocklistEntryCreatedSchema, {
    entryId: row.id,
    domain: row.domain,
    reason: row.reason,
    category: row.category,
    ...(reviewItemId ? { reviewItemId } : {}),
  });
  return row;
}

async function findEntry(em: EntityManager, id: string): Promise<BlocklistEntryRow> {
  if (!isUuid(id)) throw entryNotFound();
  const row = await em.findOne(BlocklistEntryEntity, { id });
  if (!row) throw entryNotFound();
  return row;
}

export function blocklistAdminService(deps: ProtectionDeps, blocklist: BlocklistVersions): ServiceImpl<typeof BlocklistAdminService> {
  return {
    async createBlocklistEntry(req) {
      const domain = accepted(checkDomain(req.domain));
      const reason = accepted(checkOneOf("reason", req.reason ?? "manual", entryReasons));
      const category = accepted(checkOneOf("category", req.category ?? "other", categories));
      const notes = accepted(checkText("notes", req.notes, NOTES_MAX));
      try {
        const row = await deps.uow.run(async (tx) => {
          if ((await tx.em.count(BlocklistEntryEntity, { domain })) > 0) throw entryExists();
          return createEntry(tx, { domain, reason, category, notes });
        });
        return toEntry(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw entryExists();
        throw err;
      }
    },

    async listBlocklistEntries(req) {
      const page = accepted(checkPage(req));
      const where: Partial<BlocklistEntryRow> = {};
      if (req.category !== undefined) where.category = accepted(checkOneOf("category", req.category, categories));
      if (req.reason !== undefined) where.reason = accepted(checkOneOf("reason", req.reason, entryReasons));
      const { rows, total } = await findPage(deps.db.em(), BlocklistEntryEntity, where, {
        orderBy: { createdAt: "asc", id: "asc" },
        limit: page.perPage,
        offset: page.offset,
      });
      return { data: rows.map(toEntry), page: page.page, perPage: page.perPage, total };
    },

    async updateBlocklistEntry(req) {
      if (req.domain !== undefined) throw validationError("domain", "domain cannot be changed: delete the entry and add another");
      const reason = req.reason === undefined ? undefined : accepted(checkOneOf("reason", req.reason, entryReasons));
      const category = req.category === undefined ? undefined : accepted(checkOneOf("category", req.category, categories));
      const notes = req.notes === undefined ? undefined : accepted(checkText("notes", req.notes, NOTES_MAX));
      const row = await deps.uow.run(async (tx) => {
        const found = await findEntry(tx.em, req.id);
        tx.em.assign(found, {
          ...(reason !== undefined ? { reason } : {}),
          ...(category !== undefined ? { category } : {}),
          ...(notes !== undefined ? { notes } : {}),
          updatedAt: new Date(),
        });
        tx.record(BlocklistEntryUpdatedSchema, { entryId: found.id, domain: found.domain, reason: found.reason, category: found.category });
        return found;
      });
      return toEntry(row);
    },

    async deleteBlocklistEntry(req) {
      await deps.uow.run(async (tx) => {
        const found = await findEntry(tx.em, req.id);
        const removed = await tx.em.nativeDelete(BlocklistEntryEntity, { id: found.id });
        if (removed === 0) throw entryNotFound();
        tx.record(BlocklistEntryDeletedSchema, { entryId: found.id, domain: found.domain });
      });
      return {};
    },

    async compileBlocklist() {
      const result = await blocklist.compile();
      return {
        compiled: result.compiled,
        version: result.version,
        entryCount: result.entry_count,
        addedCount: result.added_count,
        removedCount: result.removed_count,
      };
    },
  };
}
