// protection.v1.DeviceService handlers: registration with a token and a CSR, the owner's devices,
// heartbeats, configuration and certificate renewal.
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { LockMode } from "@mikro-orm/core";
import type { DeviceService } from "../../gen/protection/v1/device_pb.js";
import {
  DeviceCertificateRenewedSchema,
  DeviceDeletedSchema,
  OrganizationDeviceUnassignedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import type { DevicesDeps } from "./devices/deps.js";
import { configDigest, effectiveConfig } from "./devices/device-config.js";
import { checkAgentVersion, checkBlocklistVersion, checkHeartbeatStatus } from "./devices/device-rules.js";
import { toDevice, toDeviceItem, toEnrollment } from "./devices/mappers.js";
import { checkedCsr, checkRegistration, kindOf, type RegistrationInput, registerWith } from "./devices/registration.js";
import { accepted, refusal } from "./errors.js";
import { DeviceEntity, EnrollmentEntity, type EnrollmentStatus } from "./store/devices.js";
import { bearerOf } from "./tokens/token-service.js";

const dayMs = 86_400_000;
const deviceNotFound = () => refusal(Code.NotFound, "DEVICE_NOT_FOUND", "No such device.");

export function deviceService(deps: DevicesDeps): ServiceImpl<typeof DeviceService> {
  const caPem = deps.authority.ca.certPem;
  const { renewBeforeDays } = deps.settings.protection.pki;

  const callerId = () => bearerOf(currentIdentity()).name;

  function register(token: string, at: "devices" | "enroll", input: RegistrationInput, caller: string) {
    const kind = kindOf(deps.tokenKinds, token, at);
    return deps.uow.run((tx) => registerWith(tx, deps, kind, token, caller, input));
  }

  return {
    async registerDevice(req) {
      const caller = callerId();
      const input = checkRegistration(req);
      const done = await register(req.enrollmentToken, "devices", input, caller);
      return {
        deviceId: done.device.id,
        clientCert: done.certificate.certPem,
        caCert: caPem,
        blocklistVersion: done.blocklistVersion,
        config: done.config,
      };
    },

    async enrollDevice(req) {
      const caller = callerId();
      const input = checkRegistration(req);
      const done = await register(req.token, "enroll", input, caller);
      return {
        device: toDevice(done.device),
        enrollment: toEnrollment(done.enrollment),
        clientCert: done.certificate.certPem,
        caCert: caPem,
        blocklistVersion: done.blocklistVersion,
        config: done.config,
      };
    },

    async listDevices() {
      const rows = await deps.db.em().find(DeviceEntity, { accountId: callerId() }, { orderBy: { createdAt: "desc", id: "desc" } });
      return { data: rows.map(toDeviceItem) };
    },

    async getDevice(req) {
      const caller = callerId();
      if (!isUuid(req.id)) throw deviceNotFound();
      // The hot read: one prepared primary-key statement, no unit of work (see prepared-reads.ts).
      const row = await deps.db.reads.byId(DeviceEntity, req.id);
      if (!row || row.accountId !== caller) throw deviceNotFound();
      return toDevice(row);
    },

    async deleteDevice(req) {
      const caller = callerId();
      if (!isUuid(req.id)) throw deviceNotFound();
      await deps.uow.run(async (tx) => {
        const row = await tx.em.findOne(DeviceEntity, { id: req.id, accountId: caller }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!row) throw deviceNotFound();
        await deps.authority.revoke(tx.em, row.certificateSerial, "device_deleted");
        tx.em.remove(row);
        tx.record(DeviceDeletedSchema, { deviceId: row.id, accountId: caller, enrollmentId: row.enrollmentId });
        if (row.organizationId !== null) {
          tx.record(OrganizationDeviceUnassignedSchema, {
            organizationId: row.organizationId,
            deviceId: row.id,
            accountId: caller,
            unassignedByAccountId: caller,
            reason: "device_deleted",
          });
        }
      });
      return {};
    },

    async heartbeat(req) {
      const caller = callerId();
      if (!isUuid(req.id)) throw deviceNotFound();
      accepted(checkHeartbeatStatus(req.status));
      const reported = accepted(checkBlocklistVersion(req.blocklistVersion));
      const agentVersion = accepted(checkAgentVersion(req.agentVersion));
      const now = new Date();
      // One prepared statement: the heartbeat recorded (an offline device turns active) and what the answer needs.
      const [row] = await deps.db.reads.statement<HeartbeatRow>(
        "protection_device_heartbeat",
        `update "protection_device" d
            set "last_heartbeat" = $1, "agent_version" = $2, "integrity_ok" = $3, "blocklist_version" = $4, "updated_at" = $1,
                "status" = case when d."status" = 'offline' then 'active' else d."status" end
           from "protection_enrollment" e
          where d."id" = $5 and d."account_id" = $6 and e."id" = d."enrollment_id"
      returning d."certificate_not_after", d."config_digest", e."status", e."dns_blocking", e."app_blocking",
                e."bypass_detection", e."send_block_events", e."send_tamper_events"`,
        [now, agentVersion, req.integrityOk ?? false, reported, req.id, caller],
      );
      if (!row) throw deviceNotFound();
      const current = await deps.blocklist.version(() => deps.db.em());
      const config = effectiveConfig(
        deps.settings,
        {
          status: row.status,
          dnsBlocking: row.dns_blocking,
          appBlocking: row.app_blocking,
          bypassDetection: row.bypass_detection,
          sendBlockEvents: row.send_block_events,
          sendTamperEvents: row.send_tamper_events,
        },
        deps.blocklist,
      );
      const commands: string[] = [];
      if (reported !== current) commands.push("force_blocklist_update");
      if (new Date(row.certificate_not_after).getTime() - now.getTime() <= renewBeforeDays * dayMs) commands.push("renew_certificate");
      if (row.status === "unenrolled") commands.push("unenroll");
      return { blocklistVersion: current, configChanged: configDigest(config) !== row.config_digest, commands };
    },

    async getDeviceConfig(req) {
      const caller = callerId();
      if (!isUuid(req.id)) throw deviceNotFound();
      return deps.uow.run(async (tx) => {
        const device = await tx.em.findOne(DeviceEntity, { id: req.id, accountId: caller });
        if (!device) throw deviceNotFound();
        const enrollment = await tx.em.findOneOrFail(EnrollmentEntity, { id: device.enrollmentId });
        const config = effectiveConfig(deps.settings, enrollment, deps.blocklist);
        const digest = configDigest(config);
        // Reading the configuration counts as receiving it: config_changed is false until it changes again.
        if (device.configDigest !== digest) tx.em.assign(device, { configDigest: digest });
        return config;
      });
    },

    async renewCertificate(req) {
      const caller = callerId();
      if (!isUuid(req.id)) throw deviceNotFound();
      const csr = checkedCsr(req.clientCertCsr);
      const issued = await deps.uow.run(async (tx) => {
        const device = await tx.em.findOne(DeviceEntity, { id: req.id, accountId: caller }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!device) throw deviceNotFound();
        const enrollment = await tx.em.findOneOrFail(EnrollmentEntity, { id: device.enrollmentId });
        if (enrollment.status === "unenrolled" || device.status === "unenrolled") {
          throw refusal(Code.Aborted, "ENROLLMENT_NOT_ACTIVE", "The device's enrollment is unenrolled.");
        }
        const now = new Date();
        const certificate = deps.authority.issue(tx.em, { csr, deviceId: device.id, enrollmentId: enrollment.id, tier: enrollment.tier });
        const previous = device.certificateSerial;
        await deps.authority.revoke(tx.em, previous, "superseded", now);
        tx.em.assign(device, { certificateSerial: certificate.serial, certificateNotAfter: certificate.notAfter, updatedAt: now });
        tx.record(DeviceCertificateRenewedSchema, {
          deviceId: device.id,
          accountId: caller,
          certificateSerial: certificate.serial,
          previousCertificateSerial: previous,
        });
        return certificate;
      });
      return { deviceId: req.id, clientCert: issued.certPem, caCert: caPem };
    },
  };
}

interface HeartbeatRow {
  certificate_not_after: string | Date;
  config_digest: string | null;
  status: EnrollmentStatus;
  dns_blocking: boolean;
  app_blocking: boolean;
  bypass_detection: boolean;
  send_block_events: boolean;
  send_tamper_events: boolean;
}
