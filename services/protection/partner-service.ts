// protection.v1.PartnerService handlers: accountability partners. An invitation binds to an address
// (protection_partner.invitee_email) and reaches the account holding it, at invitation or once it
// registers (claimPartnerInvitations); the invitee accepts; either side removes the link, and
// each side grants or withdraws the other's sight of the events of its devices (detailed access).
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { PartnerAcceptedSchema, PartnerInvitedSchema, PartnerRemovedSchema } from "../../gen/protection/v1/events_pb.js";
import type { PartnerService } from "../../gen/protection/v1/partner_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import { isUniqueViolation } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { lockAddress } from "./relations.js";
import { checkEmail } from "./domain/account-rules.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, refusal, validationError, withinLimit } from "./errors.js";
import { publicUrl } from "./password-reset.js";
import { AccountEntity, type AccountRow } from "./store/entities.js";
import { PartnerEntity, type PartnerRow } from "./store/relations.js";
import { bearerOf } from "./tokens/token-service.js";

const INVITED = "The invitation is on its way; it waits for the holder of the address to accept.";
/** Where the invitation mail sends its reader: a page of the client app under Protection:PublicBaseUrl. */
export const PARTNERS_PAGE_PATH = "/partners";

const notFound = () => refusal(Code.NotFound, "PARTNER_NOT_FOUND", "No such partner relationship.");
const alreadyExists = () =>
  refusal(Code.AlreadyExists, "PARTNER_ALREADY_EXISTS", "You and this address are already linked, or an invitation is pending.");

/**
 * Gives the invitations to `account`'s address that no account held yet to it; called in the
 * registration's transaction. Flushes first: the account row must exist before a link names it.
 */
export async function claimPartnerInvitations(em: EntityManager, account: Pick<AccountRow, "id" | "email">): Promise<void> {
  await em.flush();
  await em.getConnection().execute(
    `update "protection_partner" set "invitee_account_id" = ?
       where "invitee_email" = ? and "invitee_account_id" is null and "inviter_account_id" <> ?`,
    [account.id, account.email, account.id],
    "run",
    em.getTransactionContext(),
  );
}

/** A relationship as `me` sees it. The invitee of a pending outgoing one stays unnamed: the list must not tell which addresses hold an account. */
function toPartner(row: PartnerRow, me: string, names: ReadonlyMap<string, string>) {
  const outgoing = row.inviterAccountId === me;
  const other = outgoing ? (row.status === "accepted" ? row.inviteeAccountId : null) : row.inviterAccountId;
  const name = other ? names.get(other) : undefined;
  return {
    id: row.id,
    ...(other ? { partnerAccountId: other } : {}),
    ...(name !== undefined ? { partnerDisplayName: name } : {}),
    status: row.status,
    direction: outgoing ? "outgoing" : "incoming",
    ...(outgoing ? { email: row.inviteeEmail } : {}),
    createdAt: timestampFromDate(row.createdAt),
    detailedAccess: outgoing ? row.inviterDetailedAccess : row.inviteeDetailedAccess,
    partnerDetailedAccess: outgoing ? row.inviteeDetailedAccess : row.inviterDetailedAccess,
  };
}

async function displayNames(em: EntityManager, ids: (string | null)[]): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await em.find(AccountEntity, { id: { $in: wanted } }, { fields: ["id", "displayName"] });
  return new Map(rows.map((r) => [r.id, r.displayName]));
}

/** A header-safe one-line form of a display name (it may hold any character but a newline in a subject). */
const oneLine = (text: string) => text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ");

export function partnerService(deps: ProtectionDeps): ServiceImpl<typeof PartnerService> {
  /** The row if the caller is one of its sides, else 404 (a stranger learns nothing of it). */
  async function related(em: EntityManager, id: string, me: string): Promise<PartnerRow> {
    if (!isUuid(id)) throw notFound();
    const row = await em.findOne(PartnerEntity, { id });
    if (!row || (row.inviterAccountId !== me && row.inviteeAccountId !== me)) throw notFound();
    return row;
  }

  return {
    async invitePartner(req) {
      const me = bearerOf(currentIdentity()).name;
      const email = accepted(checkEmail(req.email));
      // Each invitation mails an address the caller chose: bounded per account.
      await withinLimit(deps.limits, `partner-invite:${me}`, deps.settings.protection.rateLimits.partnerInvite);
      try {
        await deps.uow.run(async (tx) => {
          const inviter = await tx.em.findOne(AccountEntity, { id: me });
          if (!inviter) throw refusal(Code.NotFound, "ACCOUNT_NOT_FOUND", "No such account.");
          if (email === inviter.email) throw validationError("email", "email must not be your own address");
          await lockAddress(tx.em, email);
          const target = await tx.em.findOne(AccountEntity, { email });
          if (target) {
            // Two accounts inviting each other at once: one of them finds the other's row.
            const pair = [me, target.id].sort().join(":");
            await tx.em
              .getConnection()
              .execute(
                `select pg_advisory_xact_lock(hashtextextended(?, 0))`,
                [`protection-partner:${pair}`],
                "all",
                tx.em.getTransactionContext(),
              );
          }
          const links = await tx.em.count(PartnerEntity, {
            $or: [
              { inviterAccountId: me, inviteeEmail: email },
              ...(target
                ? [
                    { inviterAccountId: me, inviteeAccountId: target.id },
                    { inviterAccountId: target.id, inviteeAccountId: me },
                    { inviterAccountId: target.id, inviteeEmail: inviter.email },
                  ]
                : []),
            ],
          });
          if (links > 0) throw alreadyExists();
          const now = new Date();
          const row: PartnerRow = {
            id: uuidv7(now.getTime()),
            inviterAccountId: me,
            inviteeEmail: email,
            inviteeAccountId: target?.id ?? null,
            status: "pending",
            createdAt: now,
            acceptedAt: null,
            inviterDetailedAccess: false,
            inviteeDetailedAccess: false,
          };
          tx.em.persist(tx.em.create(PartnerEntity, row));
          tx.record(PartnerInvitedSchema, {
            partnerId: row.id,
            inviterAccountId: me,
            ...(target ? { inviteeAccountId: target.id } : {}),
          });
          const name = oneLine(inviter.displayName);
          deps.mail.enqueue(tx.em, {
            to: email,
            subject: `${name} invites you to be their accountability partner`,
            text: [
              "Hello,",
              "",
              `${name} asks you to be their accountability partner on Meshwork Protection: a partner`,
              "is told of their protection and approves before it can be switched off.",
              "",
              `To accept, sign in (or register with this address, ${email}) and accept the invitation:`,
              "",
              publicUrl(deps.settings, PARTNERS_PAGE_PATH),
              "",
              `If you do not know ${name}, ignore this mail.`,
            ].join("\n"),
          });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw alreadyExists();
        throw err;
      }
      return { message: INVITED };
    },

    async listPartners() {
      const me = bearerOf(currentIdentity()).name;
      const em = deps.db.em();
      const rows = await em.find(
        PartnerEntity,
        { $or: [{ inviterAccountId: me }, { inviteeAccountId: me }] },
        { orderBy: { createdAt: "asc", id: "asc" } },
      );
      const names = await displayNames(
        em,
        rows.map((r) => (r.inviterAccountId === me ? r.inviteeAccountId : r.inviterAccountId)),
      );
      return { data: rows.map((r) => toPartner(r, me, names)) };
    },

    async acceptPartner(req) {
      const me = bearerOf(currentIdentity()).name;
      const row = await deps.uow.run(async (tx) => {
        const found = await related(tx.em, req.id, me);
        if (found.inviterAccountId === me)
          throw refusal(Code.PermissionDenied, "FORBIDDEN", "Only the invited account accepts an invitation.");
        const now = new Date();
        // Decided by one statement: of two accepts at once, one finds the row no longer pending.
        const changed = await tx.em.nativeUpdate(
          PartnerEntity,
          { id: found.id, status: "pending", inviteeAccountId: me },
          { status: "accepted", acceptedAt: now },
        );
        if (changed === 0) throw refusal(Code.Aborted, "NO_PENDING_REQUEST", "This invitation is not pending.");
        tx.record(PartnerAcceptedSchema, { partnerId: found.id, inviterAccountId: found.inviterAccountId, inviteeAccountId: me });
        return { ...found, status: "accepted" as const, acceptedAt: now };
      });
      return toPartner(row, me, await displayNames(deps.db.em(), [row.inviterAccountId]));
    },

    async updatePartner(req) {
      const me = bearerOf(currentIdentity()).name;
      const detailedAccess = req.detailedAccess;
      if (detailedAccess === undefined) throw validationError("detailed_access", "detailed_access is required (true or false)");
      const row = await deps.uow.run(async (tx) => {
        const found = await related(tx.em, req.id, me);
        // Each side sets only its own grant: sight of the events of its own devices.
        const grant = found.inviterAccountId === me ? { inviterDetailedAccess: detailedAccess } : { inviteeDetailedAccess: detailedAccess };
        const changed = await tx.em.nativeUpdate(PartnerEntity, { id: found.id }, grant);
        if (changed === 0) throw notFound();
        return { ...found, ...grant };
      });
      const other = row.inviterAccountId === me ? row.inviteeAccountId : row.inviterAccountId;
      return toPartner(row, me, await displayNames(deps.db.em(), [other]));
    },

    async removePartner(req) {
      const me = bearerOf(currentIdentity()).name;
      await deps.uow.run(async (tx) => {
        const found = await related(tx.em, req.id, me);
        const removed = await tx.em.nativeDelete(PartnerEntity, { id: found.id });
        if (removed === 0) throw notFound();
        tx.record(PartnerRemovedSchema, {
          partnerId: found.id,
          inviterAccountId: found.inviterAccountId,
          ...(found.inviteeAccountId ? { inviteeAccountId: found.inviteeAccountId } : {}),
          removedByAccountId: me,
          wasAccepted: found.status === "accepted",
        });
      });
      return {};
    },
  };
}
