// The device CA the service signs with: from Protection:Pki:CaCertFile + CaKeyFile, or generated
// on the first start and kept in PostgreSQL (one row), so every instance and restart agrees. Also
// the key that seals enrollment tokens for their QR codes, derived from the CA key.
import { createPrivateKey, hkdfSync } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ConfigError } from "../../runtime/config/index.js";
import { CaLoadError, type DeviceCa, generateDeviceCa, loadDeviceCa } from "../pki/index.js";
import type { ProtectionSettings } from "../settings.js";
import { DeviceCaEntity } from "../store/devices.js";

export interface LoadedCa {
  ca: DeviceCa;
  /** 32 bytes for AES-256-GCM, the same on every instance that holds this CA. */
  sealKey: Buffer;
}

export async function loadCa(settings: ProtectionSettings, em: EntityManager): Promise<LoadedCa> {
  const { caCertFile, caKeyFile } = settings.protection.pki;
  if ((caCertFile === undefined) !== (caKeyFile === undefined)) {
    throw new ConfigError("Invalid settings Protection:Pki:CaCertFile and Protection:Pki:CaKeyFile: set both or neither.");
  }
  if (caCertFile !== undefined && caKeyFile !== undefined) {
    const [certPem, keyPem] = await Promise.all([readSetting(caCertFile, "CaCertFile"), readSetting(caKeyFile, "CaKeyFile")]);
    return fromPems(certPem, keyPem, "Protection:Pki:CaCertFile / CaKeyFile");
  }
  const stored = await em.fork().findOne(DeviceCaEntity, { id: 1 });
  if (stored) return fromPems(stored.certPem, stored.keyPem, "the CA stored in protection_device_ca");
  // Two instances starting together may both generate one: the row inserted first wins for both.
  const generated = await generateDeviceCa();
  await em
    .getConnection()
    .execute(`insert into "protection_device_ca" ("id", "cert_pem", "key_pem", "created_at") values (1, ?, ?, ?) on conflict do nothing`, [
      generated.certPem,
      generated.keyPem,
      new Date(),
    ]);
  const first = await em.fork().findOneOrFail(DeviceCaEntity, { id: 1 });
  return fromPems(first.certPem, first.keyPem, "the CA stored in protection_device_ca");
}

async function readSetting(file: string, name: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch {
    throw new ConfigError(`Invalid setting Protection:Pki:${name}: cannot read ${file}.`);
  }
}

function fromPems(certPem: string, keyPem: string, where: string): LoadedCa {
  try {
    const ca = loadDeviceCa({ certPem, keyPem });
    const keyDer = createPrivateKey(keyPem).export({ type: "pkcs8", format: "der" });
    const sealKey = Buffer.from(hkdfSync("sha256", keyDer, "meshwork-protection", "enrollment-token-seal", 32));
    return { ca, sealKey };
  } catch (err) {
    // The message names what is wrong with the CA, never the key itself.
    if (err instanceof CaLoadError) throw new ConfigError(`Invalid device CA (${where}): ${err.message}.`);
    throw err;
  }
}
