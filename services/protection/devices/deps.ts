// What the device and enrollment handlers need beyond the protection module's own deps.
import type { ProtectionDeps } from "../deps.js";
import type { DeviceBlocklist } from "./blocklist-version.js";
import type { DeviceAuthority } from "./device-authority.js";
import type { TokenKind } from "./registration.js";

export type DevicesDeps = ProtectionDeps & {
  authority: DeviceAuthority;
  /** The blocklist version and key devices are told about. */
  blocklist: DeviceBlocklist;
  /** The tokens a device may register with (POST /v1/devices, /v1/enroll/{token}). */
  tokenKinds: readonly TokenKind[];
  /** Tells the unenroll worker a new eligible_at exists. */
  unenrollWorker: { wake(): void };
};
