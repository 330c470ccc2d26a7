// How a CA key signs: the AlgorithmIdentifier written into what it signs, and the signature itself.
import { createHash, sign, type KeyObject } from "node:crypto";
import { bitString, bytesOf, children, expectTag, nullValue, oid, readWhole, sequence, tag } from "./der.js";

export interface CaSigner {
  /** The DER AlgorithmIdentifier of the signatures. */
  algorithm: Buffer;
  sign(tbs: Uint8Array): Buffer;
}

export const oids = {
  ecdsaSha256: "1.2.840.10045.4.3.2",
  ecdsaSha384: "1.2.840.10045.4.3.3",
  ecdsaSha512: "1.2.840.10045.4.3.4",
  ed25519: "1.3.101.112",
  sha256WithRsa: "1.2.840.113549.1.1.11",
  commonName: "2.5.4.3",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  crlNumber: "2.5.29.20",
  crlDistributionPoints: "2.5.29.31",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

/** A signer for the CA's private key; undefined for a key type a CA here cannot use. */
export function signerFor(key: KeyObject): CaSigner | undefined {
  const type = key.asymmetricKeyType;
  if (type === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const hash = curve === "prime256v1" ? "sha256" : curve === "secp384r1" ? "sha384" : undefined;
    if (!hash) return undefined;
    const algorithm = sequence(oid(hash === "sha256" ? oids.ecdsaSha256 : oids.ecdsaSha384));
    return { algorithm, sign: (tbs) => sign(hash, tbs, { key, dsaEncoding: "der" }) };
  }
  if (type === "ed25519") return { algorithm: sequence(oid(oids.ed25519)), sign: (tbs) => sign(null, tbs, key) };
  if (type === "rsa") return { algorithm: sequence(oid(oids.sha256WithRsa), nullValue()), sign: (tbs) => sign("sha256", tbs, key) };
  return undefined;
}

/** `SEQUENCE { tbs, algorithm, BIT STRING signature }`: a certificate or a CRL. */
export function signed(tbs: Buffer, signer: CaSigner): Buffer {
  return sequence(tbs, signer.algorithm, bitString(signer.sign(tbs)));
}

/** RFC 5280's key identifier (method 1): SHA-1 of the subjectPublicKey bits of a DER SubjectPublicKeyInfo. */
export function keyIdentifier(spki: Uint8Array): Buffer {
  const root = readWhole(spki);
  const [, bits] = children(spki, expectTag(root, tag.sequence, "public key info"));
  const bitsNode = expectTag(bits, tag.bitString, "public key bits");
  return createHash("sha1")
    .update(bytesOf(spki, bitsNode).subarray(bitsNode.contentStart - bitsNode.start + 1))
    .digest();
}
