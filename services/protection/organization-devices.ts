// Devices of organizations: assigning one (by an owner or admin, or at its registration with one
// of the organization's tokens), unassigning one, and unassigning them all when the organization
// is deleted. Each change records organization.device_assigned or device_unassigned.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import {
  EnrollmentUpdatedSchema,
  OrganizationDeviceAssignedSchema,
  OrganizationDeviceUnassignedSchema,
} from "../../gen/protection/v1/events_pb.js";
import type { OrganizationDeviceSchema } from "../../gen/protection/v1/organization_pb.js";
import type { Transaction } from "../runtime/outbox/index.js";
import { itemFields } from "./devices/mappers.js";
import { refusal } from "./errors.js";
import type { DeviceRow } from "./store/devices.js";

export const deviceNotFound = () => refusal(Code.NotFound, "DEVICE_NOT_FOUND", "No such device.");

export const deviceAlreadyAssigned = (here: boolean) =>
  refusal(
    Code.AlreadyExists,
    "DEVICE_ALREADY_ASSIGNED",
    here
      ? "This device is already assigned to this organization."
      : "This device is assigned to another organization; it must be unassigned there first.",
  );

export function toOrganizationDevice(row: DeviceRow): MessageInitShape<typeof OrganizationDeviceSchema> {
  return {
    ...itemFields(row),
    accountId: row.accountId,
    ...(row.assignedAt ? { assignedAt: timestampFromDate(row.assignedAt) } : {}),
  };
}

/**
 * Assigns `device` (its row locked by the caller, and not assigned) to the organization.
 * `by` is the owner or admin who assigns it, or the account that redeemed `tokenId`.
 */
export function assignDevice(
  tx: Transaction,
  device: DeviceRow,
  organizationId: string,
  by: { accountId: string; tokenId?: string },
): void {
  const now = new Date();
  tx.em.assign(device, { organizationId, assignedAt: now, updatedAt: now });
  tx.record(OrganizationDeviceAssignedSchema, {
    organizationId,
    deviceId: device.id,
    accountId: device.accountId,
    assignedByAccountId: by.accountId,
    tokenId: by.tokenId ?? "",
  });
}

/** Takes `device` (locked by the caller) out of its organization. */
export function unassignDevice(tx: Transaction, device: DeviceRow, byAccountId: string): void {
  const organizationId = device.organizationId;
  if (organizationId === null) return;
  const now = new Date();
  tx.em.assign(device, { organizationId: null, assignedAt: null, updatedAt: now });
  tx.record(OrganizationDeviceUnassignedSchema, {
    organizationId,
    deviceId: device.id,
    accountId: device.accountId,
    unassignedByAccountId: byAccountId,
    reason: "unassigned",
  });
}

/**
 * What deleting an organization does to its devices and enrollments, in its transaction (the
 * organization's row locked, so no assignment or redemption runs alongside):
 * - every device assigned to it is unassigned, one device_unassigned (reason organization_deleted) each;
 * - its enrollments are kept, organization_id included, as the record of where they came from (no
 *   organization will have that id again, so it grants nobody anything). The enrollee still sees
 *   and leaves them; a partner or authority enrollment, still live, that only the organization's
 *   owners and admins controlled (no approver of its own) gets the deleting owner as its approver,
 *   one enrollment.updated each: without one, a request to leave could never be approved.
 */
export async function releaseOrganization(tx: Transaction, organizationId: string, byAccountId: string): Promise<void> {
  const conn = tx.em.getConnection();
  const ctx = tx.em.getTransactionContext();
  const now = new Date();
  const devices = await conn.execute<{ id: string; account_id: string }[]>(
    `update "protection_device" set "organization_id" = null, "assigned_at" = null, "updated_at" = ?
      where "organization_id" = ? returning "id", "account_id"`,
    [now, organizationId],
    "all",
    ctx,
  );
  for (const device of devices) {
    tx.record(OrganizationDeviceUnassignedSchema, {
      organizationId,
      deviceId: device.id,
      accountId: device.account_id,
      unassignedByAccountId: byAccountId,
      reason: "organization_deleted",
    });
  }
  const handedOver = await conn.execute<{ id: string }[]>(
    `update "protection_enrollment" set "partner_account_id" = ?, "updated_at" = ?
      where "organization_id" = ? and "tier" <> 'self' and "partner_account_id" is null and "status" <> 'unenrolled'
      returning "id"`,
    [byAccountId, now, organizationId],
    "all",
    ctx,
  );
  for (const enrollment of handedOver) {
    tx.record(EnrollmentUpdatedSchema, { enrollmentId: enrollment.id, updatedBy: byAccountId });
  }
}
