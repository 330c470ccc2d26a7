// Registering a device with a token: the token names an enrollment to activate (an enrollment
// token redeems its own pending enrollment; an organization's token makes one, see
// ../organization-enrollments.ts), then one transaction issues the certificate, writes the device
// and turns the enrollment active.
import { Code } from "@connectrpc/connect";
import { LockMode } from "@mikro-orm/core";
import { DeviceRegisteredSchema, EnrollmentActivatedSchema } from "../../../gen/protection/v1/events_pb.js";
import type { Transaction } from "../../runtime/outbox/index.js";
import { recordEnrollmentChange } from "../device-events/event-store.js";
import { uuidv7 } from "../domain/ids.js";
import { accepted, refusal, validationError } from "../errors.js";
import { CsrError, type IssuedCertificate, type ParsedCsr, parseCsr } from "../pki/index.js";
import type { ProtectionSettings } from "../settings.js";
import { DeviceEntity, type DeviceRow, EnrollmentEntity, type EnrollmentRow } from "../store/devices.js";
import type { DeviceBlocklist } from "./blocklist-version.js";
import type { DeviceAuthority } from "./device-authority.js";
import { configDigest, type DeviceConfig, effectiveConfig } from "./device-config.js";
import { checkAgentVersion, checkHostname, checkPlatform } from "./device-rules.js";
import { ENROLLMENT_TOKEN, hashToken } from "./enrollment-token.js";

export interface RegistrationInput {
  platform: string;
  hostname: string;
  agentVersion: string;
  csr: ParsedCsr;
}

export interface Registration {
  device: DeviceRow;
  enrollment: EnrollmentRow;
  certificate: IssuedCertificate;
  blocklistVersion: number;
  config: DeviceConfig;
}

/** What a token redeemed to: the enrollment to activate, and what follows the activation. */
export interface Redemption {
  /** Locked in the transaction and still pending (or just created). */
  enrollment: EnrollmentRow;
  /** Runs in the same transaction once the device is written and the enrollment active. */
  activated?(tx: Transaction, registration: Registration): Promise<void>;
}

/**
 * One kind of token: `redeem` answers its redemption or throws the token's refusal (404
 * TOKEN_NOT_FOUND, 403, 409 ...). A kind with `enrollPathOnly` registers at /v1/enroll/{token}
 * only, whose answer carries the enrollment it makes; POST /v1/devices refuses it with a 400.
 */
export interface TokenKind {
  matches(token: string): boolean;
  redeem(tx: Transaction, token: string, callerId: string): Promise<Redemption>;
  enrollPathOnly?: boolean;
}

export const tokenNotFound = () => refusal(Code.NotFound, "TOKEN_NOT_FOUND", "No such token, or it has expired.");

/** `enr_...`: the pending enrollment created with it, by its creator (self, partner) or anyone (authority). */
export const enrollmentTokens: TokenKind = {
  matches: (token) => token.startsWith("enr_"),
  async redeem(tx, token, callerId) {
    if (!ENROLLMENT_TOKEN.test(token)) throw tokenNotFound();
    const row = await tx.em.findOne(EnrollmentEntity, { tokenHash: hashToken(token) }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!row) throw tokenNotFound();
    if (row.tier !== "authority" && row.createdBy !== callerId) {
      throw refusal(Code.PermissionDenied, "FORBIDDEN", "This enrollment token belongs to another account.");
    }
    if (row.redeemedAt !== null || row.status !== "pending") {
      throw refusal(Code.AlreadyExists, "DEVICE_ALREADY_ENROLLED", "This enrollment token was already used by a device.");
    }
    if (row.tokenExpiresAt.getTime() <= Date.now()) throw tokenNotFound();
    return { enrollment: row };
  },
};

/** The body's fields, checked before any token is touched: a refusal leaves the token usable. */
export function checkRegistration(body: {
  platform: string;
  hostname: string;
  agentVersion: string;
  clientCertCsr: string;
}): RegistrationInput {
  const platform = accepted(checkPlatform(body.platform));
  const hostname = accepted(checkHostname(body.hostname));
  const agentVersion = accepted(checkAgentVersion(body.agentVersion));
  return { platform, hostname, agentVersion, csr: checkedCsr(body.clientCertCsr) };
}

export function checkedCsr(pem: string): ParsedCsr {
  try {
    return parseCsr(pem);
  } catch (err) {
    if (err instanceof CsrError) throw validationError(err.field, err.message);
    throw err;
  }
}

/** The kind of `token`, or 404 TOKEN_NOT_FOUND; at POST /v1/devices (`at` "devices") a kind of /v1/enroll only is 400. */
export function kindOf(kinds: readonly TokenKind[], token: string, at: "devices" | "enroll"): TokenKind {
  const kind = kinds.find((k) => k.matches(token));
  if (!kind) throw tokenNotFound();
  if (at === "devices" && kind.enrollPathOnly) {
    throw validationError(
      "enrollment_token",
      "enrollment_token must be an enrollment token; this kind registers at POST /v1/enroll/{token}",
    );
  }
  return kind;
}

/** Redeems the token and activates its enrollment for a new (or the named) device of `callerId`, in `tx`. */
export async function registerWith(
  tx: Transaction,
  deps: { authority: DeviceAuthority; settings: ProtectionSettings; blocklist: DeviceBlocklist },
  kind: TokenKind,
  token: string,
  callerId: string,
  input: RegistrationInput,
): Promise<Registration> {
  const redemption = await kind.redeem(tx, token, callerId);
  const registration = await activate(tx, deps, redemption.enrollment, callerId, input);
  await redemption.activated?.(tx, registration);
  return registration;
}

/** Activates `enrollment` for a device of `callerId`: the device named by the enrollment keeps its id. */
export async function activate(
  tx: Transaction,
  deps: { authority: DeviceAuthority; settings: ProtectionSettings; blocklist: DeviceBlocklist },
  enrollment: EnrollmentRow,
  callerId: string,
  input: RegistrationInput,
): Promise<Registration> {
  // An enrollment a resolver has just created is written first: the device row refers to it.
  await tx.em.flush();
  const now = new Date();
  const deviceId = enrollment.deviceId ?? uuidv7(now.getTime());
  const existing = enrollment.deviceId
    ? await tx.em.findOne(DeviceEntity, { id: deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE })
    : null;
  if (existing && existing.accountId !== callerId) {
    throw refusal(Code.PermissionDenied, "FORBIDDEN", "The device this enrollment names belongs to another account.");
  }
  const certificate = deps.authority.issue(tx.em, { csr: input.csr, deviceId, enrollmentId: enrollment.id, tier: enrollment.tier });
  const previousStatus = enrollment.status;
  tx.em.assign(enrollment, {
    status: "active",
    redeemedAt: now,
    tokenSealed: null,
    deviceId,
    accountId: enrollment.accountId ?? callerId,
    updatedAt: now,
  });
  const blocklistVersion = await deps.blocklist.versionNow(tx.em);
  const config = effectiveConfig(deps.settings, enrollment, deps.blocklist);
  const fields = {
    enrollmentId: enrollment.id,
    platform: input.platform,
    hostname: input.hostname,
    agentVersion: input.agentVersion,
    status: "active" as const,
    blocklistVersion,
    certificateSerial: certificate.serial,
    certificateNotAfter: certificate.notAfter,
    configDigest: configDigest(config),
    updatedAt: now,
  };
  let device: DeviceRow;
  if (existing) {
    await deps.authority.revoke(tx.em, existing.certificateSerial, "superseded", now);
    device = tx.em.assign(existing, fields);
  } else {
    device = tx.em.create(DeviceEntity, {
      ...fields,
      id: deviceId,
      accountId: callerId,
      organizationId: null,
      assignedAt: null,
      lastHeartbeat: null,
      integrityOk: null,
      createdAt: now,
    });
    tx.em.persist(device);
  }
  tx.record(DeviceRegisteredSchema, {
    deviceId,
    accountId: callerId,
    enrollmentId: enrollment.id,
    platform: input.platform,
    certificateSerial: certificate.serial,
  });
  tx.record(EnrollmentActivatedSchema, { enrollmentId: enrollment.id, deviceId, accountId: callerId, tier: enrollment.tier });
  await tx.em.flush();
  await recordEnrollmentChange(tx.em, [device], enrollment.id, previousStatus, "active", now);
  return { device, enrollment, certificate, blocklistVersion, config };
}
