// protection.v1.AppSignatureService handlers: the identifiers of gambling apps that agents block,
// unique per platform + identifier type + identifier (409 APP_SIGNATURE_ALREADY_EXISTS).
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { AppSignatureInput, AppSignatureService } from "../../gen/protection/v1/app_signature_pb.js";
import { AppSignatureCreatedSchema, AppSignatureDeletedSchema, AppSignatureUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import { findPage } from "../runtime/database/find-page.js";
import { isUuid } from "../runtime/errors/index.js";
import { isUniqueViolation } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { categories, checkIdentifier, checkName, checkOneOf, checkPage, identifierTypes, platforms } from "./domain/blocklist-rules.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, refusal } from "./errors.js";
import { AppSignatureEntity, type AppSignatureRow } from "./store/blocklist.js";

const notFound = () => refusal(Code.NotFound, "APP_SIGNATURE_NOT_FOUND", "No such app signature.");
const alreadyExists = () =>
  refusal(
    Code.AlreadyExists,
    "APP_SIGNATURE_ALREADY_EXISTS",
    "An app signature with this platform, identifier type and identifier exists.",
  );

function toAppSignature(row: AppSignatureRow) {
  return {
    id: row.id,
    platform: row.platform,
    identifier: row.identifier,
    identifierType: row.identifierType,
    displayName: row.displayName,
    category: row.category,
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  };
}

/** The checked fields of a record (the contract makes each one required). */
function fieldsOf(req: AppSignatureInput) {
  const platform = accepted(checkOneOf("platform", req.platform, platforms));
  const identifierType = accepted(checkOneOf("identifier_type", req.identifierType, identifierTypes));
  return {
    platform,
    identifierType,
    identifier: accepted(checkIdentifier(identifierType, req.identifier)),
    displayName: accepted(checkName("display_name", req.displayName, 200)),
    category: accepted(checkOneOf("category", req.category, categories)),
  };
}

async function findSignature(em: EntityManager, id: string): Promise<AppSignatureRow> {
  if (!isUuid(id)) throw notFound();
  const row = await em.findOne(AppSignatureEntity, { id });
  if (!row) throw notFound();
  return row;
}

export function appSignatureService(deps: ProtectionDeps): ServiceImpl<typeof AppSignatureService> {
  /** A write whose unique violation (a concurrent twin) is the same 409 as the check's. */
  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (isUniqueViolation(err)) throw alreadyExists();
      throw err;
    }
  }

  const taken = async (em: EntityManager, fields: ReturnType<typeof fieldsOf>, except?: string) =>
    (await em.count(AppSignatureEntity, {
      platform: fields.platform,
      identifierType: fields.identifierType,
      identifier: fields.identifier,
      ...(except ? { id: { $ne: except } } : {}),
    })) > 0;

  return {
    async createAppSignature(req) {
      const fields = fieldsOf(req);
      const row = await guarded(() =>
        deps.uow.run(async (tx) => {
          if (await taken(tx.em, fields)) throw alreadyExists();
          const now = new Date();
          const created: AppSignatureRow = { id: uuidv7(now.getTime()), ...fields, createdAt: now, updatedAt: now };
          tx.em.persist(tx.em.create(AppSignatureEntity, created));
          tx.record(AppSignatureCreatedSchema, { appSignatureId: created.id, ...fields });
          return created;
        }),
      );
      return toAppSignature(row);
    },

    async listAppSignatures(req) {
      const page = accepted(checkPage(req));
      const where: Partial<AppSignatureRow> = {};
      if (req.platform !== undefined) where.platform = accepted(checkOneOf("platform", req.platform, platforms));
      if (req.category !== undefined) where.category = accepted(checkOneOf("category", req.category, categories));
      const { rows, total } = await findPage(deps.db.em(), AppSignatureEntity, where, {
        orderBy: { createdAt: "asc", id: "asc" },
        limit: page.perPage,
        offset: page.offset,
      });
      return { data: rows.map(toAppSignature), page: page.page, perPage: page.perPage, total };
    },

    async getAppSignature(req) {
      return toAppSignature(await findSignature(deps.db.em(), req.id));
    },

    async replaceAppSignature(req) {
      const fields = fieldsOf(req);
      const row = await guarded(() =>
        deps.uow.run(async (tx) => {
          const found = await findSignature(tx.em, req.id);
          if (await taken(tx.em, fields, found.id)) throw alreadyExists();
          tx.em.assign(found, { ...fields, updatedAt: new Date() });
          await tx.em.flush();
          tx.record(AppSignatureUpdatedSchema, { appSignatureId: found.id, ...fields });
          return found;
        }),
      );
      return toAppSignature(row);
    },

    async deleteAppSignature(req) {
      await deps.uow.run(async (tx) => {
        const found = await findSignature(tx.em, req.id);
        if ((await tx.em.nativeDelete(AppSignatureEntity, { id: found.id })) === 0) throw notFound();
        tx.record(AppSignatureDeletedSchema, { appSignatureId: found.id });
      });
      return {};
    },
  };
}
