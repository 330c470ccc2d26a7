// Who may read a device's data (analytics and events): its owner, the owner's accepted partners,
// the partner or authority of its enrollment, and the members of an organization holding it (the
// device's or its enrollment's organization). Anyone else: 403 FORBIDDEN, not 404 (the record
// exists; the caller has no sight of it). Partners (the owner's, or a partner-tier enrollment's)
// see the aggregates; the events too only when the owner granted them detailed access.
import { Code } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { isUuid } from "../../runtime/errors/index.js";
import { refusal } from "../errors.js";
import { DeviceEntity, EnrollmentEntity } from "../store/devices.js";

export type Sight = "events" | "aggregates";

export const forbidden = (message = "You have no sight of this device's data.") => refusal(Code.PermissionDenied, "FORBIDDEN", message);
export const deviceNotFound = () => refusal(Code.NotFound, "DEVICE_NOT_FOUND", "No such device.");
export const enrollmentNotFound = () => refusal(Code.NotFound, "ENROLLMENT_NOT_FOUND", "No such enrollment.");

interface Holder {
  ownerId: string | null;
  /** The enrollment's partner or authority. */
  approverId: string | null;
  tier: string | null;
  organizationIds: (string | null)[];
}

async function sightOf(em: EntityManager, holder: Holder, caller: string): Promise<Sight | undefined> {
  if (holder.ownerId === caller) return "events";
  if (holder.approverId === caller && holder.tier === "authority") return "events";
  const organizations = holder.organizationIds.filter((o): o is string => o !== null);
  if (organizations.length > 0) {
    const [member] = await em.execute<{ n: number }[]>(
      `select count(*)::int as "n" from "protection_organization_member"
        where "organization_id" = any(?::uuid[]) and "account_id" = ? and "status" = 'active'`,
      [`{${organizations.join(",")}}`, caller],
    );
    if ((member?.n ?? 0) > 0) return "events";
  }
  if (holder.ownerId === null) return holder.approverId === caller ? "aggregates" : undefined;
  // The owner's accepted partner (a partner-tier enrollment's partner is one as long as the link
  // lasts): detailed access is the owner's grant on that link.
  const [link] = await em.execute<{ detailed: boolean }[]>(
    `select case when "inviter_account_id" = ? then "inviter_detailed_access" else "invitee_detailed_access" end as "detailed"
       from "protection_partner"
      where "status" = 'accepted'
        and (("inviter_account_id" = ? and "invitee_account_id" = ?) or ("inviter_account_id" = ? and "invitee_account_id" = ?))
      limit 1`,
    [holder.ownerId, holder.ownerId, caller, caller, holder.ownerId],
  );
  if (link) return link.detailed ? "events" : "aggregates";
  if (holder.approverId === caller) return "aggregates";
  return undefined;
}

/** The caller's sight of the device; 404 DEVICE_NOT_FOUND for no such device, 403 for none. */
export async function deviceSight(em: EntityManager, deviceId: string, caller: string): Promise<Sight> {
  if (!isUuid(deviceId)) throw deviceNotFound();
  const device = await em.findOne(DeviceEntity, { id: deviceId });
  if (!device) throw deviceNotFound();
  if (device.accountId === caller) return "events";
  const enrollment = await em.findOne(EnrollmentEntity, { id: device.enrollmentId });
  const sight = await sightOf(
    em,
    {
      ownerId: device.accountId,
      approverId: enrollment?.partnerAccountId ?? null,
      tier: enrollment?.tier ?? null,
      organizationIds: [device.organizationId, enrollment?.organizationId ?? null],
    },
    caller,
  );
  if (!sight) throw forbidden();
  return sight;
}

/** The caller's sight of the enrollment's device data; 404 ENROLLMENT_NOT_FOUND for no such enrollment, 403 for none. */
export async function enrollmentSight(em: EntityManager, enrollmentId: string, caller: string): Promise<Sight> {
  if (!isUuid(enrollmentId)) throw enrollmentNotFound();
  const enrollment = await em.findOne(EnrollmentEntity, { id: enrollmentId });
  if (!enrollment) throw enrollmentNotFound();
  if (enrollment.accountId === caller) return "events";
  const device = enrollment.deviceId ? await em.findOne(DeviceEntity, { id: enrollment.deviceId }) : null;
  const sight = await sightOf(
    em,
    {
      ownerId: enrollment.accountId,
      approverId: enrollment.partnerAccountId,
      tier: enrollment.tier,
      organizationIds: [enrollment.organizationId, device?.organizationId ?? null],
    },
    caller,
  );
  if (!sight) throw forbidden("You have no sight of this enrollment's device data.");
  return sight;
}

/**
 * What an analytics or events query covers: device_id, else enrollment_id, else the caller's own
 * devices. `rows` is a condition on "device_id" / "enrollment_id" (events, rollup), `devices` one
 * on the protection_device row aliased `d`; each with its bindings. `sight`: own devices, events.
 */
export interface Scope {
  rows: { where: string; bindings: unknown[] };
  devices: { where: string; bindings: unknown[] };
  sight: Sight;
}

export async function scopeOf(
  em: EntityManager,
  caller: string,
  query: { deviceId?: string | undefined; enrollmentId?: string | undefined },
): Promise<Scope> {
  if (query.deviceId !== undefined) {
    const sight = await deviceSight(em, query.deviceId, caller);
    if (query.enrollmentId !== undefined) {
      if (!isUuid(query.enrollmentId)) throw enrollmentNotFound();
      return {
        rows: { where: `"device_id" = ? and "enrollment_id" = ?`, bindings: [query.deviceId, query.enrollmentId] },
        devices: { where: `d."id" = ? and d."enrollment_id" = ?`, bindings: [query.deviceId, query.enrollmentId] },
        sight,
      };
    }
    return {
      rows: { where: `"device_id" = ?`, bindings: [query.deviceId] },
      devices: { where: `d."id" = ?`, bindings: [query.deviceId] },
      sight,
    };
  }
  if (query.enrollmentId !== undefined) {
    const sight = await enrollmentSight(em, query.enrollmentId, caller);
    return {
      rows: { where: `"enrollment_id" = ?`, bindings: [query.enrollmentId] },
      devices: { where: `d."enrollment_id" = ?`, bindings: [query.enrollmentId] },
      sight,
    };
  }
  return ownDevices(caller);
}

export function ownDevices(caller: string): Scope {
  return {
    rows: { where: `"device_id" in (select "id" from "protection_device" where "account_id" = ?)`, bindings: [caller] },
    devices: { where: `d."account_id" = ?`, bindings: [caller] },
    sight: "events",
  };
}

export function organizationDevices(organizationId: string): Scope {
  return {
    rows: { where: `"device_id" in (select "id" from "protection_device" where "organization_id" = ?)`, bindings: [organizationId] },
    devices: { where: `d."organization_id" = ?`, bindings: [organizationId] },
    sight: "aggregates",
  };
}
