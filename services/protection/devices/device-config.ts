// A device's effective configuration: the service's settings and its enrollment's flags (all off
// once unenrolled), with a digest that tells whether it changed since the device last received it.
import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeviceConfigSchema } from "../../../gen/protection/v1/device_pb.js";
import type { ProtectionSettings } from "../settings.js";
import type { EnrollmentRow } from "../store/devices.js";

export type DeviceConfig = MessageInitShape<typeof DeviceConfigSchema> & {
  protection: { dnsBlocking: boolean; appBlocking: boolean; bypassDetection: boolean };
  reporting: { sendBlockEvents: boolean; sendTamperEvents: boolean };
};

type Flags = Pick<EnrollmentRow, "status" | "dnsBlocking" | "appBlocking" | "bypassDetection" | "sendBlockEvents" | "sendTamperEvents">;

/** The blocklist's signing key as devices learn it. */
export interface BlocklistKey {
  keyId: string;
  publicKey: string;
}

export function effectiveConfig(settings: ProtectionSettings, enrollment: Flags, key: BlocklistKey): DeviceConfig {
  const on = enrollment.status !== "unenrolled";
  return {
    blocklistUrl: `${settings.protection.publicBaseUrl.replace(/\/+$/, "")}/v1/blocklist`,
    heartbeatIntervalSecs: settings.protection.devices.heartbeatIntervalSeconds,
    blocklistKeyId: key.keyId,
    blocklistPublicKey: key.publicKey,
    protection: {
      dnsBlocking: on && enrollment.dnsBlocking,
      appBlocking: on && enrollment.appBlocking,
      bypassDetection: on && enrollment.bypassDetection,
    },
    reporting: { sendBlockEvents: on && enrollment.sendBlockEvents, sendTamperEvents: on && enrollment.sendTamperEvents },
  };
}

export function configDigest(config: DeviceConfig): string {
  const { blocklistUrl, heartbeatIntervalSecs, blocklistKeyId, blocklistPublicKey, protection: p, reporting: r } = config;
  const canonical = [
    blocklistUrl,
    heartbeatIntervalSecs,
    blocklistKeyId,
    blocklistPublicKey,
    p.dnsBlocking,
    p.appBlocking,
    p.bypassDetection,
    r.sendBlockEvents,
    r.sendTamperEvents,
  ];
  return createHash("sha256").update(JSON.stringify(canonical)).digest("base64url");
}
