// The certificate revocation list: DER (RFC 5280 v2), signed by the device CA, listing revoked
// serials with their revocation dates, with thisUpdate, nextUpdate, a CRL number and the CA's key id.
import type { DeviceCa } from "./ca.js";
import { extension } from "./ca.js";
import { normalizeSerial } from "./certificate.js";
import { contextConstructed, contextPrimitive, integer, integerFromBytes, sequence, time } from "./der.js";
import { oids, signed } from "./signing.js";

export interface RevokedCertificate {
  /** Hexadecimal serial (any case, as issueDeviceCertificate answers it). */
  serial: string;
  revokedAt: Date;
}

export interface CrlOptions {
  revoked: readonly RevokedCertificate[];
  /** Grows with every CRL the CA publishes (e.g. a counter kept with the CA, or the time in seconds). */
  crlNumber: bigint | number;
  /** Default now. */
  thisUpdate?: Date;
  /** When clients should fetch a new one; must be after thisUpdate. */
  nextUpdate: Date;
}

export function createCrl(ca: DeviceCa, options: CrlOptions): Buffer {
  const thisUpdate = options.thisUpdate ?? new Date();
  if (options.nextUpdate.getTime() <= thisUpdate.getTime()) throw new RangeError("nextUpdate must be after thisUpdate");
  const seen = new Set<string>();
  const entries: Buffer[] = [];
  for (const { serial, revokedAt } of options.revoked) {
    const hex = normalizeSerial(serial);
    if (seen.has(hex)) continue;
    seen.add(hex);
    entries.push(sequence(integerFromBytes(Buffer.from(hex.length % 2 ? `0${hex}` : hex, "hex")), time(revokedAt)));
  }
  const tbs = sequence(
    integer(1), // v2: the CRL has extensions
    ca.signer.algorithm,
    ca.subject,
    time(thisUpdate),
    time(options.nextUpdate),
    // An empty list is left out, as RFC 5280 asks.
    ...(entries.length ? [sequence(...entries)] : []),
    contextConstructed(
      0,
      sequence(
        extension(oids.authorityKeyIdentifier, false, sequence(contextPrimitive(0, ca.keyId))),
        extension(oids.crlNumber, false, integer(options.crlNumber)),
      ),
    ),
  );
  return signed(tbs, ca.signer);
}
