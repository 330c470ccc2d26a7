// Certificate signing requests from devices: a PEM PKCS#10 request holding an Ed25519 or P-256
// key whose self-signature verifies. Anything else is refused with a CsrError naming the field.
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { bytesOf, children, contentOf, DerError, expectTag, pemToDer, readOid, readWhole, tag } from "./der.js";
import { oids } from "./signing.js";

/** The request field, as the registration and renewal bodies name it. */
export const csrField = "client_cert_csr";

/** A refused CSR: the service answers 400 VALIDATION_ERROR with this message, which names the field. */
export class CsrError extends Error {
  override name = "CsrError";
  readonly field = csrField;
  constructor(problem: string) {
    super(`${csrField} ${problem}`);
  }
}

export type DeviceKeyType = "ed25519" | "p256";

export interface ParsedCsr {
  keyType: DeviceKeyType;
  publicKey: KeyObject;
  /** The DER SubjectPublicKeyInfo the certificate will carry. */
  spki: Buffer;
}

/** Far beyond any Ed25519 or P-256 request; a bigger text is refused before it is read. */
const maxPemLength = 16 * 1024;

const ecdsaHashes: Readonly<Record<string, string>> = {
  [oids.ecdsaSha256]: "sha256",
  [oids.ecdsaSha384]: "sha384",
  [oids.ecdsaSha512]: "sha512",
};

export function parseCsr(pem: string): ParsedCsr {
  if (typeof pem !== "string" || pem.length > maxPemLength) throw new CsrError("must be a PEM certificate request of at most 16 KiB");
  const der = pemToDer(pem, ["CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"]);
  if (!der) throw new CsrError("must be a PEM PKCS#10 certificate request (-----BEGIN CERTIFICATE REQUEST-----)");
  let info: Buffer;
  let spki: Buffer;
  let algorithm: string;
  let signature: Buffer;
  try {
    const [infoNode, algNode, sigNode] = children(der, expectTag(readWhole(der), tag.sequence, "request"));
    const infoFields = children(der, expectTag(infoNode, tag.sequence, "request info"));
    expectTag(infoFields[0], tag.integer, "version");
    expectTag(infoFields[1], tag.sequence, "subject");
    spki = bytesOf(der, expectTag(infoFields[2], tag.sequence, "public key info"));
    info = bytesOf(der, infoNode!);
    algorithm = readOid(der, children(der, expectTag(algNode, tag.sequence, "signature algorithm"))[0]!);
    const bits = contentOf(der, expectTag(sigNode, tag.bitString, "signature"));
    if (bits[0] !== 0) throw new DerError("signature has unused bits");
    signature = bits.subarray(1);
  } catch (err) {
    if (err instanceof DerError) throw new CsrError(`is not a well-formed PKCS#10 certificate request (${err.message})`);
    throw err;
  }

  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: spki, format: "der", type: "spki" });
  } catch {
    throw new CsrError("holds a public key that cannot be read");
  }
  const keyType = deviceKeyType(publicKey);
  if (!keyType) throw new CsrError(`holds ${describeKey(publicKey)}; only Ed25519 and P-256 keys are accepted`);

  let valid: boolean;
  if (keyType === "ed25519") {
    if (algorithm !== oids.ed25519) throw new CsrError("is signed with an algorithm that does not match its Ed25519 key");
    valid = verify(null, info, publicKey, signature);
  } else {
    const hash = ecdsaHashes[algorithm];
    if (!hash) throw new CsrError("is signed with an algorithm that does not match its P-256 key");
    try {
      valid = verify(hash, info, { key: publicKey, dsaEncoding: "der" }, signature);
    } catch {
      valid = false;
    }
  }
  if (!valid) throw new CsrError("has a signature that does not verify with its own key");
  return { keyType, publicKey, spki };
}

function deviceKeyType(key: KeyObject): DeviceKeyType | undefined {
  if (key.asymmetricKeyType === "ed25519") return "ed25519";
  if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") return "p256";
  return undefined;
}

function describeKey(key: KeyObject): string {
  const type = key.asymmetricKeyType;
  if (type === "rsa" || type === "rsa-pss") return "an RSA key";
  if (type === "ec") return `an EC key on ${key.asymmetricKeyDetails?.namedCurve ?? "an unknown curve"}`;
  return `an ${type ?? "unknown"} key`;
}
