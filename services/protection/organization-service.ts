// protection.v1.OrganizationService handlers: organizations, their members (added when the address
// has an account, else invited by mail), their devices and their bulk enrollment tokens with QR
// codes.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  OrganizationCreatedSchema,
  OrganizationDeletedSchema,
  OrganizationMemberAddedSchema,
  OrganizationMemberRemovedSchema,
  OrganizationMemberUpdatedSchema,
  OrganizationTokenCreatedSchema,
  OrganizationTokenRevokedSchema,
  OrganizationUpdatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import type { OrganizationService } from "../../gen/protection/v1/organization_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import { isUniqueViolation } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { checkEmail } from "./domain/account-rules.js";
import { uuidv7 } from "./domain/ids.js";
import {
  checkDescription,
  checkMaxUses,
  checkOrganizationName,
  checkOrganizationRole,
  checkTier,
  checkTokenLabel,
  mayGrant,
  mayManage,
} from "./domain/organization-rules.js";
import { accepted, refusal, validationError } from "./errors.js";
import {
  assignDevice,
  deviceAlreadyAssigned,
  deviceNotFound,
  releaseOrganization,
  toOrganizationDevice,
  unassignDevice,
} from "./organization-devices.js";
import { hashOrganizationToken, newOrganizationToken, type TokenSealKey, tokenNotFound } from "./organization-tokens.js";
import { qrPng } from "./qr.js";
import { hasOrganizationRole, lockAddress, organizationRole } from "./relations.js";
import { DeviceEntity } from "./store/devices.js";
import { AccountEntity, type AccountRow } from "./store/entities.js";
import { OrganizationTokenEntity, type OrganizationTokenRow } from "./store/organization-tokens.js";
import {
  OrganizationEntity,
  OrganizationMemberEntity,
  type OrganizationMemberRow,
  type OrganizationRole,
  type OrganizationRow,
} from "./store/relations.js";
import { bearerOf } from "./tokens/token-service.js";

const organizationNotFound = () => refusal(Code.NotFound, "ORGANIZATION_NOT_FOUND", "No such organization.");
const memberNotFound = () => refusal(Code.NotFound, "MEMBER_NOT_FOUND", "No such member of this organization.");
const forbidden = (message: string) => refusal(Code.PermissionDenied, "FORBIDDEN", message);
const memberExists = () => refusal(Code.AlreadyExists, "MEMBER_ALREADY_EXISTS", "This address or account is already a member.");
const lastOwner = () => refusal(Code.Aborted, "LAST_OWNER", "An organization keeps at least one owner; make another member owner first.");

const roleNames: Record<OrganizationRole, string> = { owner: "an owner", admin: "an admin", member: "a member" };

function toOrganization(row: OrganizationRow, role: OrganizationRole) {
  return {
    id: row.id,
    name: row.name,
    ...(row.description !== null ? { description: row.description } : {}),
    createdAt: timestampFromDate(row.createdAt),
    role,
  };
}

function toMember(row: OrganizationMemberRow, account: AccountRow | undefined) {
  return {
    id: row.id,
    ...(row.accountId !== null ? { accountId: row.accountId } : {}),
    email: account?.email ?? row.email,
    ...(account ? { displayName: account.displayName } : {}),
    role: row.role,
    status: row.status,
    createdAt: timestampFromDate(row.createdAt),
  };
}

function toToken(row: OrganizationTokenRow) {
  return {
    id: row.id,
    label: row.label,
    tier: row.tier,
    maxUses: row.maxUses,
    uses: row.uses,
    createdAt: timestampFromDate(row.createdAt),
    ...(row.revokedAt ? { revokedAt: timestampFromDate(row.revokedAt) } : {}),
  };
}

/** The accounts of the active members among `rows`, by id. */
async function accountsOf(em: EntityManager, rows: OrganizationMemberRow[]): Promise<Map<string, AccountRow>> {
  const ids = rows.flatMap((r) => (r.accountId ? [r.accountId] : []));
  if (ids.length === 0) return new Map();
  const accounts = await em.find(AccountEntity, { id: { $in: ids } });
  return new Map(accounts.map((a) => [a.id, a]));
}

export function organizationService(deps: ProtectionDeps, sealKey: TokenSealKey): ServiceImpl<typeof OrganizationService> {
  const base = deps.settings.protection.publicBaseUrl.replace(/\/+$/, "");
  const callerId = () => bearerOf(currentIdentity()).name;

  /**
   * The organization and the caller's active membership; 404 for anyone else. With `lock` (in a
   * transaction) the organization's row is locked first, so changes to its members serialize and
   * the caller's role is read after every earlier change committed.
   */
  async function access(em: EntityManager, organizationId: string, lock = false) {
    if (!isUuid(organizationId)) throw organizationNotFound();
    const organization = await em.findOne(
      OrganizationEntity,
      { id: organizationId },
      lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {},
    );
    const me = organization
      ? await em.findOne(OrganizationMemberEntity, { organizationId, accountId: callerId(), status: "active" }, { refresh: true })
      : null;
    if (!organization || !me) throw organizationNotFound();
    return { organization, me };
  }

  function need(role: OrganizationRole, needed: OrganizationRole, what: string): void {
    if (!hasOrganizationRole(role, needed))
      throw forbidden(`Only the organization's owners${needed === "admin" ? " and admins" : ""} may ${what}.`);
  }

  async function memberOf(em: EntityManager, organizationId: string, memberId: string): Promise<OrganizationMemberRow> {
    if (!isUuid(memberId)) throw memberNotFound();
    const member = await em.findOne(OrganizationMemberEntity, { id: memberId, organizationId }, { refresh: true });
    if (!member) throw memberNotFound();
    return member;
  }

  /** Whether the organization would keep an active owner without `member` as one. */
  async function keepsAnOwner(em: EntityManager, member: OrganizationMemberRow): Promise<boolean> {
    if (member.role !== "owner" || member.status !== "active") return true;
    const others = await em.count(OrganizationMemberEntity, {
      organizationId: member.organizationId,
      role: "owner",
      status: "active",
      id: { $ne: member.id },
    });
    return others > 0;
  }

  const qrUrl = (organizationId: string, tokenId: string) => `${base}/v1/organizations/${organizationId}/tokens/${tokenId}/qr`;

  return {
    async createOrganization(req) {
      const caller = callerId();
      const name = accepted(checkOrganizationName(req.name));
      const description = accepted(checkDescription(req.description));
      const account = await deps.db.em().findOne(AccountEntity, { id: caller });
      if (!account) throw refusal(Code.NotFound, "ACCOUNT_NOT_FOUND", "No such account.");
      const now = new Date();
      const organization: OrganizationRow = { id: uuidv7(now.getTime()), name, description, createdAt: now, updatedAt: now };
      const owner: OrganizationMemberRow = {
        id: uuidv7(now.getTime()),
        organizationId: organization.id,
        accountId: caller,
        email: account.email,
        role: "owner",
        status: "active",
        createdAt: now,
      };
      await deps.uow.run(async (tx) => {
        // The schemas declare no relation, so MikroORM does not order the inserts: the parent first.
        tx.em.persist(tx.em.create(OrganizationEntity, organization));
        await tx.em.flush();
        tx.em.persist(tx.em.create(OrganizationMemberEntity, owner));
        tx.record(OrganizationCreatedSchema, { organizationId: organization.id, accountId: caller });
        tx.record(OrganizationMemberAddedSchema, {
          organizationId: organization.id,
          memberId: owner.id,
          accountId: caller,
          role: "owner",
          status: "active",
          addedByAccountId: caller,
        });
      });
      return toOrganization(organization, "owner");
    },

    async listOrganizations() {
      const em = deps.db.em();
      const memberships = await em.find(OrganizationMemberEntity, { accountId: callerId(), status: "active" });
      if (memberships.length === 0) return { data: [] };
      const roles = new Map(memberships.map((m) => [m.organizationId, m.role]));
      const organizations = await em.find(
        OrganizationEntity,
        { id: { $in: [...roles.keys()] } },
        { orderBy: { createdAt: "asc", id: "asc" } },
      );
      return { data: organizations.map((o) => toOrganization(o, roles.get(o.id)!)) };
    },

    async getOrganization(req) {
      const { organization, me } = await access(deps.db.em(), req.id);
      return toOrganization(organization, me.role);
    },

    async updateOrganization(req) {
      const caller = callerId();
      return deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "admin", "change it");
        const changes: Partial<OrganizationRow> = {};
        if (req.name !== undefined) changes.name = accepted(checkOrganizationName(req.name));
        if (req.description !== undefined) changes.description = accepted(checkDescription(req.description));
        const changed = Object.entries(changes).some(([key, value]) => organization[key as keyof OrganizationRow] !== value);
        if (changed) {
          tx.em.assign(organization, { ...changes, updatedAt: new Date() });
          tx.record(OrganizationUpdatedSchema, { organizationId: organization.id, accountId: caller });
        }
        return toOrganization(organization, me.role);
      });
    },

    async deleteOrganization(req) {
      const caller = callerId();
      await deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "owner", "delete it");
        const live = await tx.em.find(OrganizationTokenEntity, { organizationId: organization.id, revokedAt: null });
        for (const token of live) {
          tx.record(OrganizationTokenRevokedSchema, {
            organizationId: organization.id,
            tokenId: token.id,
            revokedByAccountId: caller,
            reason: "organization_deleted",
          });
        }
        await releaseOrganization(tx, organization.id, caller);
        // Its members and tokens go with it (on delete cascade): a deleted token redeems as unknown.
        await tx.em.nativeDelete(OrganizationEntity, { id: organization.id });
        tx.record(OrganizationDeletedSchema, { organizationId: organization.id, accountId: caller });
      });
      return {};
    },

    async addMember(req) {
      const caller = callerId();
      try {
        const { member, account } = await deps.uow.run(async (tx) => {
          const { organization, me } = await access(tx.em, req.id, true);
          need(me.role, "admin", "add members");
          const email = accepted(checkEmail(req.email));
          const role = accepted(checkOrganizationRole(req.role));
          if (!mayGrant(me.role, role)) throw forbidden(`You may grant at most the role ${me.role}.`);
          await lockAddress(tx.em, email);
          const account = await tx.em.findOne(AccountEntity, { email });
          const taken = await tx.em.count(OrganizationMemberEntity, {
            organizationId: organization.id,
            $or: [{ email }, ...(account ? [{ accountId: account.id }] : [])],
          });
          if (taken > 0) throw memberExists();
          const now = new Date();
          const member: OrganizationMemberRow = {
            id: uuidv7(now.getTime()),
            organizationId: organization.id,
            accountId: account?.id ?? null,
            email,
            role,
            status: account ? "active" : "invited",
            createdAt: now,
          };
          tx.em.persist(tx.em.create(OrganizationMemberEntity, member));
          await tx.em.flush();
          tx.record(OrganizationMemberAddedSchema, {
            organizationId: organization.id,
            memberId: member.id,
            accountId: member.accountId ?? "",
            role,
            status: member.status,
            addedByAccountId: caller,
          });
          const inviter = await tx.em.findOne(AccountEntity, { id: caller });
          const by = inviter?.displayName ?? "A member";
          if (account) {
            deps.mail.enqueue(tx.em, {
              to: email,
              subject: `You were added to ${organization.name}`,
              text:
                `${by} added you to the organization "${organization.name}" on Meshwork Protection as ${roleNames[role]}.\n\n` +
                `You see it among your organizations at ${base}/v1/organizations.\n`,
            });
          } else {
            deps.mail.enqueue(tx.em, {
              to: email,
              subject: `${by} invited you to join ${organization.name}`,
              text:
                `${by} invited you to join the organization "${organization.name}" on Meshwork Protection as ${roleNames[role]}.\n\n` +
                `Register an account with this address (${email}) at ${base} and you join it at once.\n` +
                "If you did not expect this invitation, you can ignore this mail.\n",
            });
          }
          return { member, account: account ?? undefined };
        });
        return toMember(member, account);
      } catch (err) {
        if (isUniqueViolation(err)) throw memberExists();
        throw err;
      }
    },

    async listMembers(req) {
      const em = deps.db.em();
      const { organization } = await access(em, req.id);
      const rows = await em.find(
        OrganizationMemberEntity,
        { organizationId: organization.id },
        { orderBy: { createdAt: "asc", id: "asc" } },
      );
      const accounts = await accountsOf(em, rows);
      return { data: rows.map((r) => toMember(r, r.accountId ? accounts.get(r.accountId) : undefined)) };
    },

    async updateMember(req) {
      const caller = callerId();
      const { member, account } = await deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "admin", "change members' roles");
        const member = await memberOf(tx.em, organization.id, req.memberId);
        const role = accepted(checkOrganizationRole(req.role));
        if (!mayManage(me.role, member.role)) throw forbidden("Only owners change the role of a member of your rank or above.");
        if (!mayGrant(me.role, role)) throw forbidden(`You may grant at most the role ${me.role}.`);
        const previousRole = member.role;
        if (role !== previousRole) {
          if (role !== "owner" && !(await keepsAnOwner(tx.em, member))) throw lastOwner();
          tx.em.assign(member, { role });
          tx.record(OrganizationMemberUpdatedSchema, {
            organizationId: organization.id,
            memberId: member.id,
            accountId: member.accountId ?? "",
            role,
            previousRole,
            status: member.status,
            previousStatus: member.status,
            updatedByAccountId: caller,
          });
        }
        const account = member.accountId ? ((await tx.em.findOne(AccountEntity, { id: member.accountId })) ?? undefined) : undefined;
        return { member, account };
      });
      return toMember(member, account);
    },

    async removeMember(req) {
      const caller = callerId();
      await deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id, true);
        const member = await memberOf(tx.em, organization.id, req.memberId);
        // Anyone may leave; removing someone else takes an admin outranking them, or an owner.
        if (member.accountId !== caller) {
          need(me.role, "admin", "remove members");
          if (!mayManage(me.role, member.role)) throw forbidden("Only owners remove a member of your rank or above.");
        }
        if (!(await keepsAnOwner(tx.em, member))) throw lastOwner();
        await tx.em.nativeDelete(OrganizationMemberEntity, { id: member.id });
        tx.record(OrganizationMemberRemovedSchema, {
          organizationId: organization.id,
          memberId: member.id,
          accountId: member.accountId ?? "",
          removedByAccountId: caller,
        });
      });
      return {};
    },

    async assignDevice(req) {
      const caller = callerId();
      const device = await deps.uow.run(async (tx) => {
        // The organization's row first, as everywhere here, then the device's: two organizations
        // assigning one device at once serialize on the device, and the second sees it taken.
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "admin", "assign devices");
        if (req.deviceId === "") throw validationError("device_id", "device_id is required");
        if (!isUuid(req.deviceId)) throw deviceNotFound();
        const device = await tx.em.findOne(DeviceEntity, { id: req.deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
        if (!device) throw deviceNotFound();
        const ownersDevice =
          device.accountId === caller || (await organizationRole(tx.em, organization.id, device.accountId)) !== undefined;
        if (!ownersDevice) throw deviceNotFound();
        if (device.organizationId !== null) throw deviceAlreadyAssigned(device.organizationId === organization.id);
        assignDevice(tx, device, organization.id, { accountId: caller });
        return device;
      });
      return toOrganizationDevice(device);
    },

    async listOrganizationDevices(req) {
      const em = deps.db.em();
      const { organization } = await access(em, req.id);
      const rows = await em.find(DeviceEntity, { organizationId: organization.id }, { orderBy: { assignedAt: "asc", id: "asc" } });
      return { data: rows.map(toOrganizationDevice) };
    },

    async unassignDevice(req) {
      const caller = callerId();
      await deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "admin", "unassign devices");
        if (!isUuid(req.deviceId)) throw deviceNotFound();
        const device = await tx.em.findOne(
          DeviceEntity,
          { id: req.deviceId, organizationId: organization.id },
          { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
        );
        if (!device) throw deviceNotFound();
        unassignDevice(tx, device, caller);
      });
      return {};
    },

    async createToken(req) {
      const caller = callerId();
      return deps.uow.run(async (tx) => {
        // Locked: a deletion of the organization at the same time cannot leave the insert dangling.
        const { organization, me } = await access(tx.em, req.id, true);
        need(me.role, "admin", "create enrollment tokens");
        const label = accepted(checkTokenLabel(req.label));
        const tier = accepted(checkTier(req.tier));
        const maxUses = accepted(checkMaxUses(req.maxUses));
        const now = new Date();
        const id = uuidv7(now.getTime());
        const token = newOrganizationToken();
        tx.em.persist(
          tx.em.create(OrganizationTokenEntity, {
            id,
            organizationId: organization.id,
            label,
            tier,
            tokenHash: hashOrganizationToken(token),
            tokenSealed: sealKey.seal(id, token),
            maxUses,
            uses: 0,
            createdBy: caller,
            createdAt: now,
            revokedAt: null,
          }),
        );
        tx.record(OrganizationTokenCreatedSchema, {
          organizationId: organization.id,
          tokenId: id,
          tier,
          maxUses,
          createdByAccountId: caller,
        });
        return { id, token, qrUrl: qrUrl(organization.id, id) };
      });
    },

    async listTokens(req) {
      const em = deps.db.em();
      const { organization, me } = await access(em, req.id);
      need(me.role, "admin", "see enrollment tokens");
      const rows = await em.find(
        OrganizationTokenEntity,
        { organizationId: organization.id },
        { orderBy: { createdAt: "desc", id: "desc" } },
      );
      return { data: rows.map(toToken) };
    },

    async revokeToken(req) {
      const caller = callerId();
      await deps.uow.run(async (tx) => {
        const { organization, me } = await access(tx.em, req.id);
        need(me.role, "admin", "revoke enrollment tokens");
        if (!isUuid(req.tokenId)) throw tokenNotFound();
        const revoked = await tx.em.nativeUpdate(
          OrganizationTokenEntity,
          { id: req.tokenId, organizationId: organization.id, revokedAt: null },
          { revokedAt: new Date() },
        );
        if (revoked === 0) throw tokenNotFound();
        tx.record(OrganizationTokenRevokedSchema, {
          organizationId: organization.id,
          tokenId: req.tokenId,
          revokedByAccountId: caller,
          reason: "revoked",
        });
      });
      return {};
    },

    async getTokenQr(req, ctx) {
      const em = deps.db.em();
      const { organization, me } = await access(em, req.id);
      need(me.role, "admin", "see enrollment tokens");
      if (!isUuid(req.tokenId)) throw tokenNotFound();
      const row = await em.findOne(OrganizationTokenEntity, { id: req.tokenId, organizationId: organization.id, revokedAt: null });
      if (!row) throw tokenNotFound();
      const token = sealKey.open(row.id, Buffer.from(row.tokenSealed));
      if (token === undefined) {
        deps.logger.warn(
          { organizationId: organization.id, tokenId: row.id },
          "an organization token does not open under the current token key",
        );
        throw refusal(
          Code.NotFound,
          "TOKEN_NOT_FOUND",
          "This token's QR code cannot be made any more (the token key changed); create a new token.",
        );
      }
      ctx.responseHeader.set("cache-control", "no-store");
      return { contentType: "image/png", data: await qrPng(`${base}/v1/enroll/${token}`) };
    },
  };
}
