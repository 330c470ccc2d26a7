// Devices, their certificates and enrollments as one part of the protection module: its RPC
// services, tables and workers, started from the module's start().
import type { DescService } from "@bufbuild/protobuf";
import { DeviceService } from "../../../gen/protection/v1/device_pb.js";
import { EnrollmentService } from "../../../gen/protection/v1/enrollment_pb.js";
import { PkiService } from "../../../gen/protection/v1/pki_pb.js";
import { ConfigError } from "../../runtime/config/index.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import type { Worker } from "../../runtime/module/index.js";
import type { ProtectionDeps } from "../deps.js";
import { deviceService } from "../device-service.js";
import { enrollmentService } from "../enrollment-service.js";
import { pkiService } from "../pki-service.js";
import type { ProtectionSettings } from "../settings.js";
import { CertificateEntity, DeviceCaEntity, DeviceEntity, DeviceEventEntity, EnrollmentEntity } from "../store/devices.js";
import { ProtectionDevices0004 } from "../store/migrations/0004-devices.js";
import { loadCa } from "./ca-store.js";
import type { DevicesDeps } from "./deps.js";
import { type DeviceAuthority, deviceAuthority } from "./device-authority.js";
import { type DeviceBlocklist, deviceBlocklist } from "./blocklist-version.js";
import { startOfflineWorker } from "./offline-worker.js";
import { enrollmentTokens, type TokenKind } from "./registration.js";
import { startUnenrollWorker } from "./unenroll-worker.js";

export { enrollmentTokens, type Redemption, type TokenKind } from "./registration.js";

export const devicesServices: readonly DescService[] = [PkiService, DeviceService, EnrollmentService];
export const devicesEntities = [DeviceCaEntity, EnrollmentEntity, DeviceEntity, CertificateEntity, DeviceEventEntity];
export const devicesMigration = { name: "protection-0004-devices", class: ProtectionDevices0004 };

function checkDelayBounds(settings: ProtectionSettings): void {
  const { minUnenrollDelayHours: min, maxUnenrollDelayHours: max, defaultUnenrollDelayHours: fallback } = settings.protection.enrollments;
  if (min > max) throw new ConfigError("Invalid setting Protection:Enrollments:MinUnenrollDelayHours: larger than MaxUnenrollDelayHours.");
  if (fallback < min || fallback > max) {
    throw new ConfigError(
      "Invalid setting Protection:Enrollments:DefaultUnenrollDelayHours: outside MinUnenrollDelayHours..MaxUnenrollDelayHours.",
    );
  }
}

/** The device CA, loaded (or generated) before anything of the module starts: a bad setting stops start-up cleanly. */
export interface PreparedDevices {
  authority: DeviceAuthority;
  blocklist: DeviceBlocklist;
}

export async function prepareDevices(
  deps: Pick<ProtectionDeps, "settings" | "db">,
  blocklistKey: { keyId: string; publicKey: string },
): Promise<PreparedDevices> {
  const { protection } = deps.settings;
  checkDelayBounds(deps.settings);
  const { ca, sealKey } = await loadCa(deps.settings, deps.db.em());
  return {
    authority: deviceAuthority({
      ca,
      sealKey,
      publicBaseUrl: protection.publicBaseUrl,
      validityDays: protection.pki.certificateValidityDays,
    }),
    blocklist: deviceBlocklist(blocklistKey),
  };
}

/**
 * Starts the workers and builds the handlers. `tokenKinds` are the tokens a device may register
 * with, enrollment tokens first; the organization tokens plug in here.
 */
export function startDevices(
  deps: ProtectionDeps,
  { authority, blocklist }: PreparedDevices,
  tokenKinds: readonly TokenKind[] = [enrollmentTokens],
): { services: ServiceRegistration[]; workers: Worker[] } {
  const { protection } = deps.settings;
  const unenroll = startUnenrollWorker({ db: deps.db, uow: deps.uow, authority, logger: deps.logger });
  const offline = startOfflineWorker({
    uow: deps.uow,
    logger: deps.logger,
    heartbeatIntervalSeconds: protection.devices.heartbeatIntervalSeconds,
  });
  const devicesDeps: DevicesDeps = { ...deps, authority, blocklist, tokenKinds, unenrollWorker: unenroll };
  return {
    services: [
      defineService(PkiService, pkiService(devicesDeps)),
      defineService(DeviceService, deviceService(devicesDeps)),
      defineService(EnrollmentService, enrollmentService(devicesDeps)),
    ],
    workers: [
      { name: "unenroll worker", stop: () => unenroll.stop() },
      { name: "offline devices", stop: () => offline.stop() },
    ],
  };
}
