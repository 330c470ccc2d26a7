// The blocklist signing key: Ed25519 through libsodium, over the JCS bytes of an answer as served
// minus its `signature`. The seed is a secret: it never reaches a message, a log line or an error.
import { createHash, randomBytes } from "node:crypto";
import sodium from "libsodium-wrappers";
import { canonicalJsonBytes, type JsonValue } from "./jcs.js";

export const blocklistSigningAlgorithm = "Ed25519";
/** The setting holding the base64 32-byte seed; unset, the module generates one and keeps it. */
export const signingKeySetting = "Protection:Blocklist:SigningKey";

/** A seed that is not base64 of 32 bytes. The message names the setting, never the value. */
export class SigningKeyError extends Error {
  override name = "SigningKeyError";
}

export type SignableAnswer = { [key: string]: JsonValue };

export interface BlocklistSigner {
  /** First 16 hex characters of SHA-256 of the raw public key. */
  readonly keyId: string;
  readonly algorithm: typeof blocklistSigningAlgorithm;
  /** Base64 of the raw 32-byte public key. */
  readonly publicKey: string;
  /** `{ key_id, algorithm, public_key }`: the body of `GET /v1/blocklist/public-key`. */
  readonly publicKeyAnswer: { key_id: string; algorithm: typeof blocklistSigningAlgorithm; public_key: string };
  /** Base64 Ed25519 signature over the UTF-8 JCS of `answer`, which must not hold `signature`. */
  sign(answer: SignableAnswer): string;
  /** `answer` with its `signature` added. */
  signed<T extends SignableAnswer>(answer: T): T & { signature: string };
}

/** A fresh random 32-byte seed, for the caller to keep (base64 it for the setting's format). */
export function generateSigningSeed(): Buffer {
  return randomBytes(32);
}

/** The 32 bytes of a `Protection:Blocklist:SigningKey` value (standard base64, padding optional). */
export function decodeSigningSeed(base64: string): Buffer {
  const text = typeof base64 === "string" ? base64.trim() : "";
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(text)) throw new SigningKeyError(`${signingKeySetting} must be base64 of a 32-byte Ed25519 seed`);
  const seed = Buffer.from(text, "base64");
  if (seed.length !== 32 || seed.toString("base64").slice(0, 43) !== text.slice(0, 43)) {
    throw new SigningKeyError(`${signingKeySetting} must be base64 of a 32-byte Ed25519 seed`);
  }
  return seed;
}

/** `key_id` of a raw 32-byte Ed25519 public key. */
export function blocklistKeyId(rawPublicKey: Uint8Array): string {
  return createHash("sha256").update(rawPublicKey).digest("hex").slice(0, 16);
}

/** A signer for a 32-byte seed (raw bytes, or the base64 text of the setting). */
export async function createBlocklistSigner(seed: Uint8Array | string): Promise<BlocklistSigner> {
  const bytes = typeof seed === "string" ? decodeSigningSeed(seed) : seed;
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) throw new SigningKeyError("a blocklist signing seed must be 32 bytes");
  await sodium.ready;
  const { publicKey, privateKey } = sodium.crypto_sign_seed_keypair(bytes);
  const keyId = blocklistKeyId(publicKey);
  const publicKeyBase64 = Buffer.from(publicKey).toString("base64");
  const sign = (answer: SignableAnswer): string => {
    if (answer === null || typeof answer !== "object" || Array.isArray(answer)) throw new TypeError("a blocklist answer is a JSON object");
    if (Object.hasOwn(answer, "signature")) throw new TypeError("sign the answer without its signature field");
    return Buffer.from(sodium.crypto_sign_detached(canonicalJsonBytes(answer), privateKey)).toString("base64");
  };
  return {
    keyId,
    algorithm: blocklistSigningAlgorithm,
    publicKey: publicKeyBase64,
    publicKeyAnswer: { key_id: keyId, algorithm: blocklistSigningAlgorithm, public_key: publicKeyBase64 },
    sign,
    signed: (answer) => ({ ...answer, signature: sign(answer) }),
  };
}

/**
 * What an agent does: true when `answer.signature` is a valid Ed25519 signature by `publicKey`
 * (base64 of the raw 32 bytes) over the JCS of `answer` without `signature`.
 */
export async function verifyBlocklistAnswer(answer: SignableAnswer, publicKey: string): Promise<boolean> {
  const { signature, ...rest } = answer;
  if (typeof signature !== "string") return false;
  const key = Buffer.from(publicKey, "base64");
  const sig = Buffer.from(signature, "base64");
  if (key.length !== 32 || sig.length !== 64) return false;
  await sodium.ready;
  return sodium.crypto_sign_verify_detached(sig, canonicalJsonBytes(rest), key);
}
