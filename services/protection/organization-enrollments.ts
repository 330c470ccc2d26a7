// Registering a device with an organization's token (`otk_...`, POST /v1/enroll/{token} only): one
// use counted, an enrollment of the organization made active, and the new device assigned to it,
// all in the registration's transaction (a refused registration gives the use back).
//
// The enrollment: tier from the token; account_id and created_by the redeeming account. Not the
// token's creator as created_by: the token may outlive its creator's membership, created_by
// grants sight of the enrollment, and a creator's account deletion would take the enrollment with
// it (created_by cascades). Self tier: the enrollee controls it, with
// Protection:Enrollments:DefaultUnenrollDelayHours. Partner and authority tiers: no approver of
// their own (partner_account_id null); the organization's owners and admins control and approve
// (devices/enrollment-access.ts).
import { EnrollmentCreatedSchema } from "../../gen/protection/v1/events_pb.js";
import type { Transaction } from "../runtime/outbox/index.js";
import { policyOf } from "./devices/enrollment-rules.js";
import { hashToken, newEnrollmentToken } from "./devices/enrollment-token.js";
import type { TokenKind } from "./devices/index.js";
import { uuidv7 } from "./domain/ids.js";
import { assignDevice } from "./organization-devices.js";
import { hashOrganizationToken, redeemOrganizationToken, tokenNotFound } from "./organization-tokens.js";
import type { ProtectionSettings } from "./settings.js";
import { EnrollmentEntity, type EnrollmentRow } from "./store/devices.js";

/**
 * Locks the organization of `token` against deletion (and member or token changes, which lock its
 * row for update) until the registration commits; concurrent redemptions share the lock. Taken
 * before the token's row, in the order a deletion takes them (organization, then its tokens), so
 * the two never deadlock, and a deletion that follows sees the device to unassign.
 */
async function lockOrganizationOf(tx: Transaction, token: string): Promise<void> {
  const conn = tx.em.getConnection();
  const ctx = tx.em.getTransactionContext();
  const [found] = await conn.execute<{ organization_id: string }[]>(
    `select "organization_id" from "protection_organization_token" where "token_hash" = ?`,
    [hashOrganizationToken(token)],
    "all",
    ctx,
  );
  if (!found) throw tokenNotFound();
  await conn.execute(`select 1 from "protection_organization" where "id" = ? for key share`, [found.organization_id], "all", ctx);
}

export function organizationTokens(settings: ProtectionSettings): TokenKind {
  const { defaultUnenrollDelayHours } = settings.protection.enrollments;
  return {
    matches: (token) => token.startsWith("otk_"),
    enrollPathOnly: true,
    async redeem(tx, token, callerId) {
      await lockOrganizationOf(tx, token);
      const now = new Date();
      const enrollmentId = uuidv7(now.getTime());
      const deviceId = uuidv7(now.getTime());
      const redeemed = await redeemOrganizationToken(tx, token, { accountId: callerId, deviceId, enrollmentId });
      const enrollment: EnrollmentRow = {
        id: enrollmentId,
        tier: redeemed.tier,
        status: "pending",
        // The column is required and unique: the hash of an enrollment token never handed out, so
        // nothing redeems this enrollment again.
        tokenHash: hashToken(newEnrollmentToken()),
        tokenSealed: null,
        tokenExpiresAt: now,
        redeemedAt: null,
        deviceId,
        accountId: callerId,
        createdBy: callerId,
        partnerAccountId: null,
        organizationId: redeemed.organizationId,
        dnsBlocking: true,
        appBlocking: true,
        bypassDetection: true,
        sendBlockEvents: true,
        sendTamperEvents: true,
        policyType: policyOf(redeemed.tier),
        delayHours: redeemed.tier === "self" ? defaultUnenrollDelayHours : null,
        unenrollRequestedAt: null,
        eligibleAt: null,
        unenrolledAt: null,
        createdAt: now,
        updatedAt: now,
      };
      const row = tx.em.create(EnrollmentEntity, enrollment);
      tx.em.persist(row);
      tx.record(EnrollmentCreatedSchema, {
        enrollmentId,
        tier: redeemed.tier,
        createdBy: callerId,
        accountId: callerId,
        deviceId,
        organizationId: redeemed.organizationId,
      });
      return {
        enrollment: row,
        async activated(tx, registration) {
          assignDevice(tx, registration.device, redeemed.organizationId, { accountId: callerId, tokenId: redeemed.tokenId });
        },
      };
    },
  };
}
