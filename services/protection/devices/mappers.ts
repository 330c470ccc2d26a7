// Rows as the contract's messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { DeviceItemSchema, DeviceSchema } from "../../../gen/protection/v1/device_pb.js";
import type { EnrollmentSchema } from "../../../gen/protection/v1/enrollment_pb.js";
import type { DeviceRow, EnrollmentRow } from "../store/devices.js";

const optionalTime = (date: Date | null) => (date ? timestampFromDate(date) : undefined);
const optional = <T>(value: T | null) => value ?? undefined;

export function toDeviceItem(row: DeviceRow): MessageInitShape<typeof DeviceItemSchema> {
  return itemFields(row);
}

/** The list item's fields, which other messages about a device start from. */
export function itemFields(row: DeviceRow) {
  return {
    id: row.id,
    hostname: row.hostname,
    platform: row.platform,
    status: row.status,
    lastHeartbeat: optionalTime(row.lastHeartbeat),
    enrollmentId: row.enrollmentId,
    agentVersion: row.agentVersion,
  };
}

export function toDevice(row: DeviceRow): MessageInitShape<typeof DeviceSchema> {
  return {
    ...itemFields(row),
    accountId: row.accountId,
    organizationId: optional(row.organizationId),
    blocklistVersion: row.blocklistVersion,
    integrityOk: optional(row.integrityOk),
    certificateSerial: row.certificateSerial,
    certificateNotAfter: timestampFromDate(row.certificateNotAfter),
    createdAt: timestampFromDate(row.createdAt),
  };
}

export function toEnrollment(row: EnrollmentRow): MessageInitShape<typeof EnrollmentSchema> {
  return {
    id: row.id,
    tier: row.tier,
    status: row.status,
    deviceId: optional(row.deviceId),
    accountId: optional(row.accountId),
    createdBy: row.createdBy,
    partnerAccountId: optional(row.partnerAccountId),
    organizationId: optional(row.organizationId),
    protection: { dnsBlocking: row.dnsBlocking, appBlocking: row.appBlocking, bypassDetection: row.bypassDetection },
    reporting: { sendBlockEvents: row.sendBlockEvents, sendTamperEvents: row.sendTamperEvents },
    unenrollmentPolicy: { type: row.policyType, delayHours: optional(row.delayHours) },
    unenrollRequestedAt: optionalTime(row.unenrollRequestedAt),
    eligibleAt: optionalTime(row.eligibleAt),
    unenrolledAt: optionalTime(row.unenrolledAt),
    createdAt: timestampFromDate(row.createdAt),
  };
}
