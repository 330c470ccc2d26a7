// The device certificate authority: a P-256 CA generated here (its PEMs handed back for the
// caller to keep), or one loaded from PEM. What issuing and CRLs need of it is read once.
import { generateKeyPair, createPrivateKey, randomBytes, X509Certificate, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import {
  boolean,
  bytesOf,
  children,
  contentOf,
  contextConstructed,
  DerError,
  derToPem,
  expectTag,
  integer,
  integerFromBytes,
  namedBits,
  octetString,
  oid,
  readOid,
  readWhole,
  sequence,
  set,
  tag,
  time,
  utf8String,
} from "./der.js";
import { keyIdentifier, oids, signed, signerFor, type CaSigner } from "./signing.js";

export interface DeviceCa {
  /** The CA certificate, PEM, as served at /v1/pki/ca.pem and handed to devices. */
  certPem: string;
  certificate: X509Certificate;
  /** The CA's subject, DER: the issuer of everything it signs. */
  subject: Buffer;
  /** Its subject key identifier: the authority key identifier of everything it signs. */
  keyId: Buffer;
  signer: CaSigner;
}

export interface GeneratedCa {
  ca: DeviceCa;
  certPem: string;
  /** PKCS#8 PEM: a secret, for the caller to store and never log. */
  keyPem: string;
}

export interface GenerateCaOptions {
  /** Default "Meshwork Device CA". */
  commonName?: string;
  /** Default 3650 (ten years). */
  validityDays?: number;
  now?: Date;
}

/** A CA certificate or key that cannot serve; the message names what is wrong, never the key. */
export class CaLoadError extends Error {
  override name = "CaLoadError";
}

const generateKeyPairAsync = promisify(generateKeyPair);
const dayMs = 24 * 60 * 60 * 1000;
/** Issued certificates start a little in the past: a device whose clock runs slow still accepts them. */
export const backdateMs = 5 * 60 * 1000;

/** A random positive serial of 16 bytes (RFC 5280 allows up to 20), its first byte non-zero so the hex is canonical. */
export function randomSerial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes;
}

export function nameWithCommonName(commonName: string): Buffer {
  return sequence(set(sequence(oid(oids.commonName), utf8String(commonName))));
}

export function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

/** A self-signed P-256 CA: CA:true (critical), keyCertSign and cRLSign (critical), a subject key identifier. */
export async function generateDeviceCa(options: GenerateCaOptions = {}): Promise<GeneratedCa> {
  const { privateKey, publicKey } = await generateKeyPairAsync("ec", { namedCurve: "P-256" });
  const signer = signerFor(privateKey)!;
  const spki = publicKey.export({ type: "spki", format: "der" });
  const subject = nameWithCommonName(options.commonName ?? "Meshwork Device CA");
  const keyId = keyIdentifier(spki);
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - backdateMs);
  const notAfter = new Date(now.getTime() + (options.validityDays ?? 3650) * dayMs);
  const tbs = sequence(
    contextConstructed(0, integer(2)),
    integerFromBytes(randomSerial()),
    signer.algorithm,
    subject,
    sequence(time(notBefore), time(notAfter)),
    subject,
    spki,
    contextConstructed(
      3,
      sequence(
        extension(oids.basicConstraints, true, sequence(boolean(true))),
        // keyCertSign (5) and cRLSign (6).
        extension(oids.keyUsage, true, namedBits([5, 6])),
        extension(oids.subjectKeyIdentifier, false, octetString(keyId)),
      ),
    ),
  );
  const der = signed(tbs, signer);
  const certPem = derToPem(der, "CERTIFICATE");
  const keyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return { ca: caFrom(certPem, privateKey), certPem, keyPem };
}

/** A CA from its certificate and private key (PEM; PKCS#8 or SEC1 for EC keys). */
export function loadDeviceCa(pems: { certPem: string; keyPem: string }): DeviceCa {
  let key: KeyObject;
  try {
    key = createPrivateKey(pems.keyPem);
  } catch {
    throw new CaLoadError("the CA key is not a readable PEM private key");
  }
  return caFrom(pems.certPem, key);
}

/** A CA from `certFile` and `keyFile` (PEM). */
export async function loadDeviceCaFiles(files: { certFile: string; keyFile: string }): Promise<DeviceCa> {
  const [certPem, keyPem] = await Promise.all([readFile(files.certFile, "utf8"), readFile(files.keyFile, "utf8")]);
  try {
    return loadDeviceCa({ certPem, keyPem });
  } catch (err) {
    if (err instanceof CaLoadError) throw new CaLoadError(`${err.message} (${files.certFile}, ${files.keyFile})`);
    throw err;
  }
}

function caFrom(certPem: string, key: KeyObject): DeviceCa {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch {
    throw new CaLoadError("the CA certificate is not a readable PEM certificate");
  }
  if (!certificate.ca) throw new CaLoadError("the CA certificate is not a CA (basicConstraints CA:true is missing)");
  if (!certificate.checkPrivateKey(key)) throw new CaLoadError("the CA key does not belong to the CA certificate");
  const signer = signerFor(key);
  if (!signer) throw new CaLoadError("the CA key must be EC P-256, EC P-384, Ed25519 or RSA");
  try {
    const { subject, keyId } = readCaCertificate(certificate.raw);
    return { certPem: certificate.toString(), certificate, subject, keyId, signer };
  } catch (err) {
    if (err instanceof DerError) throw new CaLoadError(`the CA certificate cannot be read: ${err.message}`);
    throw err;
  }
}

/** The subject and the key identifier (its own extension, else computed) of a DER certificate. */
function readCaCertificate(der: Buffer): { subject: Buffer; keyId: Buffer } {
  const [tbsNode] = children(der, expectTag(readWhole(der), tag.sequence, "certificate"));
  const fields = children(der, expectTag(tbsNode, tag.sequence, "certificate body"));
  // [0] version is present on every v3 certificate; a v1 certificate starts at the serial.
  const at = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = bytesOf(der, expectTag(fields[at + 4], tag.sequence, "subject"));
  const spki = bytesOf(der, expectTag(fields[at + 5], tag.sequence, "public key info"));
  const extensions = fields.find((f) => f.tag === 0xa3);
  if (extensions) {
    const [list] = children(der, extensions);
    for (const ext of children(der, expectTag(list, tag.sequence, "extensions"))) {
      const parts = children(der, ext);
      if (readOid(der, parts[0]!) !== oids.subjectKeyIdentifier) continue;
      const value = contentOf(der, expectTag(parts[parts.length - 1], tag.octetString, "extension value"));
      return { subject, keyId: contentOf(value, expectTag(readWhole(value), tag.octetString, "key identifier")) };
    }
  }
  return { subject, keyId: keyIdentifier(spki) };
}
