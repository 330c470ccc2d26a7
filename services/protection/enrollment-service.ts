// protection.v1.EnrollmentService handlers: creating enrollments with their one-use tokens,
// reading them (enrollee, creator, approver, organization admins), changing them, leaving them
// (a delay on self, an approval otherwise) and the QR code of a pending token.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import type { EnrollmentService } from "../../gen/protection/v1/enrollment_pb.js";
import { EnrollmentCreatedSchema, EnrollmentUnenrollRequestedSchema, EnrollmentUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import { findPage } from "../runtime/database/find-page.js";
import type { Transaction } from "../runtime/outbox/index.js";
import type { DevicesDeps } from "./devices/deps.js";
import { administeredOrganizations, canSee, controls, type EnrollmentRelation, relationOf } from "./devices/enrollment-access.js";
import { checkDelay, checkTier, type FlagChanges, flagNames, loosens, policyOf } from "./devices/enrollment-rules.js";
import { hashToken, newEnrollmentToken, sealToken, unsealToken } from "./devices/enrollment-token.js";
import { toEnrollment } from "./devices/mappers.js";
import { completeUnenrollment } from "./devices/unenrollment.js";
import { recordEnrollmentChange } from "./device-events/event-store.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, refusal, validationError } from "./errors.js";
import { qrPng } from "./qr.js";
import { isAcceptedPartner } from "./relations.js";
import { AccountEntity } from "./store/entities.js";
import { DeviceEntity, EnrollmentEntity, type EnrollmentRow } from "./store/devices.js";
import { bearerOf } from "./tokens/token-service.js";

const hourMs = 3_600_000;
const enrollmentNotFound = () => refusal(Code.NotFound, "ENROLLMENT_NOT_FOUND", "No such enrollment.");
const deviceNotFound = () => refusal(Code.NotFound, "DEVICE_NOT_FOUND", "No such device.");
const forbidden = (message: string) => refusal(Code.PermissionDenied, "FORBIDDEN", message);
const conflict = (reason: string, message: string) => refusal(Code.Aborted, reason, message);
const LIVE = ["pending", "active", "pending_delay", "pending_approval"] as const;

export function enrollmentService(deps: DevicesDeps): ServiceImpl<typeof EnrollmentService> {
  const { enrollments } = deps.settings.protection;
  const baseUrl = deps.settings.protection.publicBaseUrl.replace(/\/+$/, "");
  const bounds = { min: enrollments.minUnenrollDelayHours, max: enrollments.maxUnenrollDelayHours };

  /** The enrollment and the caller's relation to it; 404 when the caller has none. */
  async function visible(
    em: EntityManager,
    id: string,
    caller: string,
    lock = false,
  ): Promise<{ row: EnrollmentRow; relation: EnrollmentRelation }> {
    if (!isUuid(id)) throw enrollmentNotFound();
    const row = await em.findOne(EnrollmentEntity, { id }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    if (!row) throw enrollmentNotFound();
    const relation = await relationOf(em, row, caller);
    if (!canSee(relation)) throw enrollmentNotFound();
    return { row, relation };
  }

  /** Who is told of an unenrollment request: the approver and, for an organization's enrollment, its owners and admins. */
  async function approverAddresses(em: EntityManager, row: EnrollmentRow): Promise<string[]> {
    const ids = new Set<string>();
    if (row.partnerAccountId) ids.add(row.partnerAccountId);
    if (row.organizationId) {
      const members = await em.execute<{ account_id: string }[]>(
        `select "account_id" from "protection_organization_member"
          where "organization_id" = ? and "status" = 'active' and "role" in ('owner', 'admin') and "account_id" is not null`,
        [row.organizationId],
      );
      for (const m of members) ids.add(m.account_id);
    }
    if (ids.size === 0) return [];
    const accounts = await em.find(AccountEntity, { id: { $in: [...ids] } });
    return accounts.map((a) => a.email);
  }

  async function queueRequestMail(tx: Transaction, row: EnrollmentRow): Promise<void> {
    const enrollee = row.accountId ? await tx.em.findOne(AccountEntity, { id: row.accountId }) : null;
    const who = enrollee?.displayName ?? "The enrollee";
    const text = [
      `${who} asked to leave a ${row.tier} enrollment (${row.id}) for which you are the approver.`,
      "",
      "The device stays protected until the request is approved. To approve it:",
      `POST ${baseUrl}/v1/enrollments/${row.id}/approve-unenroll`,
      "",
      "If you did not expect this request, talk to them before approving it.",
    ].join("\n");
    for (const to of await approverAddresses(tx.em, row)) {
      deps.mail.enqueue(tx.em, { to, subject: `${who} asked to leave an enrollment`, text });
    }
  }

  return {
    async createEnrollment(req) {
      const caller = bearerOf(currentIdentity());
      const tier = accepted(checkTier(req.tier));
      if (tier === "authority" && caller.role !== "authority" && caller.role !== "admin") {
        throw forbidden("Only an authority or an admin can create an authority enrollment.");
      }
      const delayHours = accepted(checkDelay(tier, req.unenrollDelayHours, bounds, enrollments.defaultUnenrollDelayHours));
      let partnerAccountId: string | null = null;
      if (tier === "partner") {
        const partner = req.partnerAccountId;
        if (partner === undefined) throw validationError("partner_account_id", "partner_account_id is required for the partner tier");
        if (!isUuid(partner) || partner === caller.name || !(await isAcceptedPartner(deps.db.em(), caller.name, partner))) {
          throw validationError("partner_account_id", "partner_account_id must be an accepted partner of yours");
        }
        partnerAccountId = partner;
      } else if (req.partnerAccountId !== undefined) {
        throw validationError("partner_account_id", "partner_account_id applies to the partner tier only");
      }
      if (tier === "authority") partnerAccountId = caller.name;

      const token = newEnrollmentToken();
      const now = new Date();
      const row = await deps.uow.run(async (tx) => {
        let deviceId: string | null = null;
        if (req.deviceId !== undefined) {
          if (!isUuid(req.deviceId)) throw deviceNotFound();
          // Locked: two enrollments made at once for one device cannot both pass the check below.
          const device = await tx.em.findOne(
            DeviceEntity,
            { id: req.deviceId, accountId: caller.name },
            { lockMode: LockMode.PESSIMISTIC_WRITE },
          );
          if (!device) throw deviceNotFound();
          const live = await tx.em.count(EnrollmentEntity, {
            $or: [{ deviceId: device.id }, { id: device.enrollmentId }],
            status: { $in: [...LIVE] },
          });
          if (live > 0) throw conflict("DEVICE_ALREADY_ENROLLED", "This device already has a live enrollment.");
          deviceId = device.id;
        }
        const created: EnrollmentRow = {
          id: uuidv7(now.getTime()),
          tier,
          status: "pending",
          tokenHash: hashToken(token),
          tokenSealed: sealToken(deps.authority.sealKey, token),
          tokenExpiresAt: new Date(now.getTime() + enrollments.tokenLifetimeHours * hourMs),
          redeemedAt: null,
          deviceId,
          accountId: tier === "authority" ? null : caller.name,
          createdBy: caller.name,
          partnerAccountId,
          organizationId: null,
          dnsBlocking: true,
          appBlocking: true,
          bypassDetection: true,
          sendBlockEvents: true,
          sendTamperEvents: true,
          policyType: policyOf(tier),
          delayHours,
          unenrollRequestedAt: null,
          eligibleAt: null,
          unenrolledAt: null,
          createdAt: now,
          updatedAt: now,
        };
        tx.em.persist(tx.em.create(EnrollmentEntity, created));
        tx.record(EnrollmentCreatedSchema, {
          enrollmentId: created.id,
          tier,
          createdBy: caller.name,
          accountId: created.accountId ?? "",
          partnerAccountId: partnerAccountId ?? "",
          deviceId: deviceId ?? "",
        });
        return created;
      });
      return { id: row.id, token, qrUrl: `${baseUrl}/v1/enrollments/${row.id}/qr`, tier, status: row.status };
    },

    async listEnrollments(req) {
      const caller = bearerOf(currentIdentity()).name;
      const page = Math.max(1, req.page ?? 1);
      const perPage = Math.min(200, Math.max(1, req.perPage ?? 50));
      const em = deps.db.em();
      const organizations = await administeredOrganizations(em, caller);
      const { rows, total } = await findPage(
        em,
        EnrollmentEntity,
        {
          $or: [
            { accountId: caller },
            { createdBy: caller },
            { partnerAccountId: caller },
            ...(organizations.length ? [{ organizationId: { $in: organizations } }] : []),
          ],
        },
        { orderBy: { createdAt: "desc", id: "desc" }, limit: perPage, offset: (page - 1) * perPage },
      );
      return { data: rows.map(toEnrollment), page, perPage, total };
    },

    async getEnrollment(req) {
      const { row } = await visible(deps.db.em(), req.id, bearerOf(currentIdentity()).name);
      return toEnrollment(row);
    },

    async updateEnrollment(req) {
      const caller = bearerOf(currentIdentity()).name;
      const row = await deps.uow.run(async (tx) => {
        const { row, relation } = await visible(tx.em, req.id, caller, true);
        if (!controls(row, relation)) throw forbidden("Only the enrollment's controller can change it.");
        if (row.status === "unenrolled") throw conflict("ENROLLMENT_NOT_ACTIVE", "This enrollment is unenrolled.");
        const delayHours = req.unenrollDelayHours === undefined ? null : accepted(checkDelay(row.tier, req.unenrollDelayHours, bounds));
        const changes: FlagChanges = { ...definedOf(req.protection ?? {}), ...definedOf(req.reporting ?? {}) };
        if (row.tier === "self" && loosens(row, changes, delayHours)) {
          throw forbidden("A self enrollment can only be tightened; leaving it goes through unenroll.");
        }
        const changed =
          flagNames.some((f) => changes[f] !== undefined && changes[f] !== row[f]) ||
          (delayHours !== null && delayHours !== row.delayHours);
        if (!changed) return row;
        tx.em.assign(row, { ...changes, ...(delayHours !== null ? { delayHours } : {}), updatedAt: new Date() });
        tx.record(EnrollmentUpdatedSchema, { enrollmentId: row.id, updatedBy: caller });
        return row;
      });
      return toEnrollment(row);
    },

    async unenroll(req) {
      const caller = bearerOf(currentIdentity()).name;
      const row = await deps.uow.run(async (tx) => {
        const { row, relation } = await visible(tx.em, req.id, caller, true);
        if (!relation.enrollee) throw forbidden("Only the enrollee can ask to leave an enrollment.");
        if (row.status === "pending_delay" || row.status === "pending_approval") {
          throw conflict("ALREADY_UNENROLLING", "An unenrollment is already pending.");
        }
        if (row.status !== "active") throw conflict("ENROLLMENT_NOT_ACTIVE", "This enrollment is not active.");
        const now = new Date();
        const from = row.status;
        if (row.tier === "self") {
          const eligibleAt = new Date(now.getTime() + (row.delayHours ?? 0) * enrollments.unenrollDelayUnitSeconds * 1000);
          tx.em.assign(row, { status: "pending_delay", unenrollRequestedAt: now, eligibleAt, updatedAt: now });
        } else {
          tx.em.assign(row, { status: "pending_approval", unenrollRequestedAt: now, eligibleAt: null, updatedAt: now });
          await queueRequestMail(tx, row);
        }
        await recordEnrollmentChange(tx.em, await tx.em.find(DeviceEntity, { enrollmentId: row.id }), row.id, from, row.status, now);
        tx.record(EnrollmentUnenrollRequestedSchema, {
          enrollmentId: row.id,
          accountId: caller,
          status: row.status,
          ...(row.eligibleAt ? { eligibleAt: timestampFromDate(row.eligibleAt) } : {}),
        });
        return row;
      });
      if (row.status === "pending_delay") {
        deps.unenrollWorker.wake();
        return { status: row.status, eligibleAt: timestampFromDate(row.eligibleAt!) };
      }
      return { status: row.status, message: "The unenrollment waits for the approver, who has been notified." };
    },

    async approveUnenroll(req) {
      const caller = bearerOf(currentIdentity()).name;
      await deps.uow.run(async (tx) => {
        const { row, relation } = await visible(tx.em, req.id, caller, true);
        if (row.tier === "self" || row.status !== "pending_approval") {
          throw conflict("NO_PENDING_REQUEST", "This enrollment has no unenrollment waiting for approval.");
        }
        if (!controls(row, relation)) throw forbidden("Only the enrollment's approver can approve its unenrollment.");
        await completeUnenrollment(tx, deps.authority, row, { reason: "approved", approvedBy: caller });
      });
      return { status: "unenrolled" };
    },

    async getEnrollmentQr(req, ctx) {
      const caller = bearerOf(currentIdentity()).name;
      const { row, relation } = await visible(deps.db.em(), req.id, caller);
      if (!relation.creator) throw forbidden("Only the enrollment's creator can show its QR code.");
      const token =
        row.status === "pending" && row.tokenSealed && row.tokenExpiresAt.getTime() > Date.now()
          ? unsealToken(deps.authority.sealKey, row.tokenSealed)
          : undefined;
      if (!token) throw refusal(Code.NotFound, "TOKEN_NOT_FOUND", "This enrollment's token was redeemed or has expired.");
      ctx.responseHeader.set("cache-control", "no-store");
      return create(HttpBodySchema, { contentType: "image/png", data: await qrPng(`${baseUrl}/v1/enroll/${token}`) });
    },
  };
}

/** The flags a PATCH names (protobuf-es leaves the others undefined), under the row's names. */
function definedOf(update: object): FlagChanges {
  const out: FlagChanges = {};
  for (const [key, value] of Object.entries(update)) {
    if (typeof value === "boolean" && (flagNames as readonly string[]).includes(key)) out[key as keyof FlagChanges] = value;
  }
  return out;
}
