// Questions other parts of device protection ask about links between accounts: is one an accepted
// partner of another, and what role does an account hold in an organization.
import type { EntityManager } from "@mikro-orm/postgresql";
import { OrganizationMemberEntity, type OrganizationRole, PartnerEntity } from "./store/relations.js";

/** Whether `accountId` and `partnerAccountId` are linked by an accepted partnership, either way. */
export async function isAcceptedPartner(em: EntityManager, accountId: string, partnerAccountId: string): Promise<boolean> {
  const found = await em.count(PartnerEntity, {
    status: "accepted",
    $or: [
      { inviterAccountId: accountId, inviteeAccountId: partnerAccountId },
      { inviterAccountId: partnerAccountId, inviteeAccountId: accountId },
    ],
  });
  return found > 0;
}

/** The active role of `accountId` in the organization, or undefined for a non-member (or an invitee). */
export async function organizationRole(
  em: EntityManager,
  organizationId: string,
  accountId: string,
): Promise<OrganizationRole | undefined> {
  const member = await em.findOne(OrganizationMemberEntity, { organizationId, accountId, status: "active" });
  return member?.role;
}

/** Whether `role` may act as `needed` or above (owner > admin > member). */
export function hasOrganizationRole(role: OrganizationRole | undefined, needed: OrganizationRole): boolean {
  const rank = { owner: 3, admin: 2, member: 1 } as const;
  return role !== undefined && rank[role] >= rank[needed];
}

/**
 * Serializes, until the transaction ends, the transactions that bind an address to an account:
 * registration (which claims the invitations waiting for its address) and the invitations that
 * look the address up. Without it, an invitation that read "no account" while the registration
 * was committing would wait for a registration that already happened.
 */
export async function lockAddress(em: EntityManager, email: string): Promise<void> {
  await em
    .getConnection()
    .execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`protection-address:${email}`], "all", em.getTransactionContext());
}
