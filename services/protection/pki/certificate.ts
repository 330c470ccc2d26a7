// Device certificates: CN = device id, SAN URIs naming the device, its enrollment and its tier,
// clientAuth only, a random positive serial, and where the CRL is, signed by the device CA.
import { X509Certificate } from "node:crypto";
import type { DeviceCa } from "./ca.js";
import { backdateMs, extension, nameWithCommonName, randomSerial } from "./ca.js";
import { parseCsr, type ParsedCsr } from "./csr.js";
import { contextConstructed, contextPrimitive, derToPem, integer, integerFromBytes, namedBits, oid, sequence, time } from "./der.js";
import { oids, signed } from "./signing.js";

export interface IssueOptions {
  /** The request: parsed already, or its PEM (a CsrError when refused). */
  csr: ParsedCsr | string;
  deviceId: string;
  enrollmentId: string;
  tier: string;
  /** Default 365. */
  validityDays?: number;
  /** The CRL distribution point, e.g. `<PublicBaseUrl>/v1/pki/crl`. */
  crlUrl: string;
  now?: Date;
}

export interface IssuedCertificate {
  certPem: string;
  /** Lower-case hex, as the device detail shows it and the CRL lists it. */
  serial: string;
  notBefore: Date;
  notAfter: Date;
}

const dayMs = 24 * 60 * 60 * 1000;

export function deviceUris(ids: { deviceId: string; enrollmentId: string; tier: string }): string[] {
  return [`urn:meshwork:device:${ids.deviceId}`, `urn:meshwork:enrollment:${ids.enrollmentId}`, `urn:meshwork:tier:${ids.tier}`];
}

export function issueDeviceCertificate(ca: DeviceCa, options: IssueOptions): IssuedCertificate {
  const csr = typeof options.csr === "string" ? parseCsr(options.csr) : options.csr;
  const validityDays = options.validityDays ?? 365;
  if (!Number.isInteger(validityDays) || validityDays < 1) throw new RangeError("validityDays must be a positive integer");
  const now = options.now ?? new Date();
  // Whole seconds: what the certificate can hold, so the answer matches it exactly.
  const notBefore = new Date(Math.floor((now.getTime() - backdateMs) / 1000) * 1000);
  const notAfter = new Date(Math.floor((now.getTime() + validityDays * dayMs) / 1000) * 1000);
  const serial = randomSerial();
  const uri = (value: string) => contextPrimitive(6, Buffer.from(value, "ascii"));
  const tbs = sequence(
    contextConstructed(0, integer(2)),
    integerFromBytes(serial),
    ca.signer.algorithm,
    ca.subject,
    sequence(time(notBefore), time(notAfter)),
    nameWithCommonName(options.deviceId),
    csr.spki,
    contextConstructed(
      3,
      sequence(
        extension(oids.basicConstraints, true, sequence()),
        // digitalSignature (0): the key signs TLS handshakes.
        extension(oids.keyUsage, true, namedBits([0])),
        extension(oids.extKeyUsage, false, sequence(oid(oids.clientAuth))),
        extension(oids.subjectAltName, false, sequence(...deviceUris(options).map(uri))),
        extension(oids.authorityKeyIdentifier, false, sequence(contextPrimitive(0, ca.keyId))),
        extension(oids.crlDistributionPoints, false, sequence(sequence(contextConstructed(0, contextConstructed(0, uri(options.crlUrl)))))),
      ),
    ),
  );
  const certPem = derToPem(signed(tbs, ca.signer), "CERTIFICATE");
  return { certPem, serial: serial.toString("hex"), notBefore, notAfter };
}

/** The serial of a PEM certificate in the form the CRL and the API use (lower-case hex, no leading zeros). */
export function certificateSerial(certPem: string): string {
  return normalizeSerial(new X509Certificate(certPem).serialNumber);
}

export function normalizeSerial(hex: string): string {
  const lower = hex.toLowerCase().replace(/^(00)+(?=.)/, "");
  if (!/^[0-9a-f]+$/.test(lower)) throw new RangeError(`"${hex}" is not a hexadecimal serial`);
  return lower;
}
