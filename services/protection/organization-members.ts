// Invitations to organizations reach their address's account: at registration, every member row
// invited under the new account's e-mail turns active and belongs to it.
import { OrganizationMemberUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import type { Transaction } from "../runtime/outbox/index.js";
import type { AccountRow } from "./store/entities.js";

/**
 * Called by registration inside its transaction. The account row is flushed first, since the
 * members now reference it. Records one organization.member_updated (invited → active) each.
 */
export async function claimOrganizationInvitations(tx: Transaction, account: Pick<AccountRow, "id" | "email">): Promise<void> {
  await tx.em.flush();
  const joined = await tx.em.getConnection().execute<{ id: string; organization_id: string; role: string }[]>(
    `update "protection_organization_member" set "account_id" = ?, "status" = 'active'
     where "email" = ? and "status" = 'invited' and "account_id" is null
     returning "id", "organization_id", "role"`,
    [account.id, account.email],
    "all",
    tx.em.getTransactionContext(),
  );
  for (const member of joined) {
    tx.record(OrganizationMemberUpdatedSchema, {
      organizationId: member.organization_id,
      memberId: member.id,
      accountId: account.id,
      role: member.role,
      previousRole: member.role,
      status: "active",
      previousStatus: "invited",
    });
  }
}
