// Who stands where on an enrollment: its enrollee, its creator, its approver (partner or
// authority) and, for an organization's enrollment, the organization's owners and admins. Seeing
// needs any of these; controlling (PATCH, approve) is the enrollee's on self and the approver's or
// the organization's otherwise.
import type { EntityManager } from "@mikro-orm/postgresql";
import { hasOrganizationRole, organizationRole } from "../relations.js";
import type { EnrollmentRow } from "../store/devices.js";

export interface EnrollmentRelation {
  enrollee: boolean;
  creator: boolean;
  approver: boolean;
  organizationAdmin: boolean;
}

export async function relationOf(em: EntityManager, row: EnrollmentRow, accountId: string): Promise<EnrollmentRelation> {
  const organizationAdmin =
    row.organizationId !== null && hasOrganizationRole(await organizationRole(em, row.organizationId, accountId), "admin");
  return {
    enrollee: row.accountId === accountId,
    creator: row.createdBy === accountId,
    approver: row.partnerAccountId === accountId,
    organizationAdmin,
  };
}

export const canSee = (r: EnrollmentRelation) => r.enrollee || r.creator || r.approver || r.organizationAdmin;

export const controls = (row: EnrollmentRow, r: EnrollmentRelation) =>
  row.tier === "self" ? r.enrollee : r.approver || r.organizationAdmin;

/** The organizations where `accountId` is an active owner or admin: their enrollments are visible to it. */
export async function administeredOrganizations(em: EntityManager, accountId: string): Promise<string[]> {
  const rows = await em.execute<{ organization_id: string }[]>(
    `select "organization_id" from "protection_organization_member"
      where "account_id" = ? and "status" = 'active' and "role" in ('owner', 'admin')`,
    [accountId],
  );
  return rows.map((r) => r.organization_id);
}
