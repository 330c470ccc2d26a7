// The protection_* tables of devices, enrollments, certificates, the device CA and device events
// as MikroORM sees them (migration 0004-devices).
import { EntitySchema } from "@mikro-orm/core";

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export type Tier = "self" | "partner" | "authority";
export type EnrollmentStatus = "pending" | "active" | "pending_delay" | "pending_approval" | "unenrolled";
export type DeviceStatus = "active" | "offline" | "unenrolled";

export interface EnrollmentRow {
  id: string;
  tier: Tier;
  status: EnrollmentStatus;
  /** Hex SHA-256 of the token (`enr_...`); the token itself is never stored in clear. */
  tokenHash: string;
  /** The token sealed (AES-256-GCM) for its QR code while pending; null once redeemed. */
  tokenSealed: string | null;
  tokenExpiresAt: Date;
  redeemedAt: Date | null;
  deviceId: string | null;
  /** The enrollee; null for an authority enrollment until its token is redeemed. */
  accountId: string | null;
  createdBy: string;
  /** The approver: partner or authority. */
  partnerAccountId: string | null;
  organizationId: string | null;
  dnsBlocking: boolean;
  appBlocking: boolean;
  bypassDetection: boolean;
  sendBlockEvents: boolean;
  sendTamperEvents: boolean;
  /** time_delay | partner_approval | authority_approval. */
  policyType: string;
  delayHours: number | null;
  unenrollRequestedAt: Date | null;
  eligibleAt: Date | null;
  unenrolledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const EnrollmentEntity = new EntitySchema<EnrollmentRow>({
  name: "ProtectionEnrollment",
  tableName: "protection_enrollment",
  properties: {
    id: { type: "uuid", primary: true },
    tier: { type: "text" },
    status: { type: "text" },
    tokenHash: { type: "text", unique: true },
    tokenSealed: { type: "text", nullable: true },
    tokenExpiresAt: { ...timestamptz },
    redeemedAt: { ...timestamptz, nullable: true },
    deviceId: { type: "uuid", nullable: true },
    accountId: { type: "uuid", nullable: true },
    createdBy: { type: "uuid" },
    partnerAccountId: { type: "uuid", nullable: true },
    organizationId: { type: "uuid", nullable: true },
    dnsBlocking: { type: "boolean" },
    appBlocking: { type: "boolean" },
    bypassDetection: { type: "boolean" },
    sendBlockEvents: { type: "boolean" },
    sendTamperEvents: { type: "boolean" },
    policyType: { type: "text" },
    delayHours: { type: "integer", nullable: true },
    unenrollRequestedAt: { ...timestamptz, nullable: true },
    eligibleAt: { ...timestamptz, nullable: true },
    unenrolledAt: { ...timestamptz, nullable: true },
    createdAt: { ...timestamptz },
    updatedAt: { ...timestamptz },
  },
});

export interface DeviceRow {
  id: string;
  /** The owner: who registered it. */
  accountId: string;
  enrollmentId: string;
  /** Set by organizations when they assign the device. */
  organizationId: string | null;
  assignedAt: Date | null;
  platform: string;
  hostname: string;
  agentVersion: string;
  status: DeviceStatus;
  lastHeartbeat: Date | null;
  /** The version the device last reported (at registration, the one it was given). */
  blocklistVersion: number;
  integrityOk: boolean | null;
  certificateSerial: string;
  certificateNotAfter: Date;
  /** Digest of the configuration the device last received (registration or GET config). */
  configDigest: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const DeviceEntity = new EntitySchema<DeviceRow>({
  name: "ProtectionDevice",
  tableName: "protection_device",
  properties: {
    id: { type: "uuid", primary: true },
    accountId: { type: "uuid" },
    enrollmentId: { type: "uuid" },
    organizationId: { type: "uuid", nullable: true },
    assignedAt: { ...timestamptz, nullable: true },
    platform: { type: "text" },
    hostname: { type: "text" },
    agentVersion: { type: "text" },
    status: { type: "text" },
    lastHeartbeat: { ...timestamptz, nullable: true },
    blocklistVersion: { type: "integer" },
    integrityOk: { type: "boolean", nullable: true },
    certificateSerial: { type: "text" },
    certificateNotAfter: { ...timestamptz },
    configDigest: { type: "text", nullable: true },
    createdAt: { ...timestamptz },
    updatedAt: { ...timestamptz },
  },
});

/** A certificate issued to a device; revoked ones are on the CRL until they expire. */
export interface CertificateRow {
  /** Lower-case hex. */
  serial: string;
  deviceId: string;
  enrollmentId: string;
  notBefore: Date;
  notAfter: Date;
  createdAt: Date;
  revokedAt: Date | null;
  /** superseded | device_deleted | unenrolled. */
  revocationReason: string | null;
}

export const CertificateEntity = new EntitySchema<CertificateRow>({
  name: "ProtectionCertificate",
  tableName: "protection_certificate",
  properties: {
    serial: { type: "text", primary: true },
    deviceId: { type: "uuid" },
    enrollmentId: { type: "uuid" },
    notBefore: { ...timestamptz },
    notAfter: { ...timestamptz },
    createdAt: { ...timestamptz },
    revokedAt: { ...timestamptz, nullable: true },
    revocationReason: { type: "text", nullable: true },
  },
});

/** The device CA generated on first start, when no CA files are configured: one row. */
export interface DeviceCaRow {
  id: number;
  certPem: string;
  /** PKCS#8 PEM: a secret. */
  keyPem: string;
  createdAt: Date;
}

export const DeviceCaEntity = new EntitySchema<DeviceCaRow>({
  name: "ProtectionDeviceCa",
  tableName: "protection_device_ca",
  properties: {
    id: { type: "smallint", primary: true },
    certPem: { type: "text" },
    keyPem: { type: "text" },
    createdAt: { ...timestamptz },
  },
});

/**
 * An event about a device: sent by its agent (POST /v1/events) or recorded by the service
 * (enrollment_change, heartbeat_missed), read by /v1/events. Written with SQL by
 * ../device-events/event-store.ts, which keeps the hourly rollup in the same statement.
 */
export interface DeviceEventRow {
  id: string;
  deviceId: string;
  /** The device's owner when the event was stored. */
  accountId: string;
  enrollmentId: string | null;
  /** The agent's id for the event: once per device. */
  clientId: string | null;
  eventType: string;
  timestamp: Date;
  domain: string | null;
  layer: string | null;
  detail: Record<string, unknown>;
  receivedAt: Date;
}

export const DeviceEventEntity = new EntitySchema<DeviceEventRow>({
  name: "ProtectionDeviceEvent",
  tableName: "protection_device_event",
  properties: {
    id: { type: "uuid", primary: true },
    deviceId: { type: "uuid" },
    accountId: { type: "uuid" },
    enrollmentId: { type: "uuid", nullable: true },
    clientId: { type: "uuid", nullable: true },
    eventType: { type: "text" },
    timestamp: { ...timestamptz },
    domain: { type: "text", nullable: true },
    layer: { type: "text", nullable: true },
    detail: { type: "json", columnType: "jsonb" },
    receivedAt: { ...timestamptz },
  },
});
