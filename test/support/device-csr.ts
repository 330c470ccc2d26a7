// Certificate signing requests as an agent makes them, with @peculiar/x509 (a client written by
// others): Ed25519 and P-256 keys, plus the RSA and tampered ones the service must refuse.
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export type CsrKind = "ed25519" | "p256" | "rsa";

const algorithms = {
  ed25519: { key: { name: "Ed25519" }, sign: { name: "Ed25519" } },
  p256: { key: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" } },
  rsa: {
    key: { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    sign: { name: "RSASSA-PKCS1-v1_5" },
  },
} as const;

export interface Csr {
  pem: string;
  /** The public key, DER SubjectPublicKeyInfo. */
  spki: Buffer;
}

export async function makeCsr(kind: CsrKind = "ed25519"): Promise<Csr> {
  const { key, sign } = algorithms[kind];
  const keys = (await webcrypto.subtle.generateKey(key as webcrypto.EcKeyGenParams, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: "CN=agent",
    keys,
    signingAlgorithm: sign as webcrypto.Algorithm,
  });
  return { pem: csr.toString("pem"), spki: Buffer.from(await webcrypto.subtle.exportKey("spki", keys.publicKey)) };
}

/** A P-256 request whose subject was changed after signing: its signature no longer verifies. */
export async function tamperedCsr(): Promise<string> {
  const { pem } = await makeCsr("p256");
  const der = Buffer.from(new x509.Pkcs10CertificateRequest(pem).rawData);
  const at = der.indexOf(Buffer.from("agent"));
  der[at + 4] = "x".charCodeAt(0);
  return `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE REQUEST-----\n`;
}

export { x509 };
