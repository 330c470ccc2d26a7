// EdDSA (Ed25519) JSON Web Tokens with node:crypto: signing, and a verification that trusts
// nothing the token says about how to check it. The algorithm is fixed (EdDSA), the key is one of
// ours found by kid, and iss, aud, exp and iat are checked with a small leeway.
import { createHash, createPublicKey, type KeyObject, randomUUID, sign, verify } from "node:crypto";

export const LEEWAY_SECONDS = 5;

export interface AccessClaims {
  sub: string;
  role: string;
  sid: string;
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** RFC 7638 thumbprint of an Ed25519 public key: a kid every instance derives alike. */
export function thumbprintOf(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: "jwk" });
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash("sha256").update(canonical).digest("base64url");
}

/** A signing key from a PKCS#8 private key; refuses anything but Ed25519. */
export function signingKeyOf(privateKey: KeyObject): SigningKey {
  if (privateKey.asymmetricKeyType !== "ed25519")
    throw new Error(`the token signing key must be Ed25519, not ${privateKey.asymmetricKeyType}`);
  const publicKey = createPublicKey(privateKey);
  return { kid: thumbprintOf(publicKey), privateKey, publicKey };
}

export function signAccessToken(key: SigningKey, claims: Omit<AccessClaims, "jti"> & { jti?: string }): string {
  const header = b64({ alg: "EdDSA", typ: "at+jwt", kid: key.kid });
  const payload = b64({ ...claims, jti: claims.jti ?? randomUUID() });
  const signature = sign(null, Buffer.from(`${header}.${payload}`), key.privateKey).toString("base64url");
  return `${header}.${payload}.${signature}`;
}

export interface VerifyOptions {
  keys: ReadonlyMap<string, KeyObject>;
  issuer: string;
  audience: string;
  /** Seconds since the epoch. */
  now: number;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

function parseJson(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** The claims of a valid token, or undefined: never an exception for a bad token. */
export function verifyAccessToken(token: string, options: VerifyOptions): AccessClaims | undefined {
  if (token.length > 4096) return undefined;
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p) => SEGMENT.test(p))) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = parseJson(h);
  if (header?.alg !== "EdDSA" || header.typ !== "at+jwt" || !isString(header.kid) || header.crit !== undefined) return undefined;
  const key = options.keys.get(header.kid);
  if (!key) return undefined;
  const signature = Buffer.from(s, "base64url");
  if (signature.length !== 64 || !verify(null, Buffer.from(`${h}.${p}`), key, signature)) return undefined;
  const claims = parseJson(p);
  if (!claims) return undefined;
  const { sub, role, sid, iss, aud, iat, exp, jti } = claims;
  if (!isString(sub) || !isString(role) || !isString(sid) || !isString(jti) || !isNumber(iat) || !isNumber(exp)) return undefined;
  if (iss !== options.issuer || aud !== options.audience) return undefined;
  if (exp + LEEWAY_SECONDS <= options.now || iat - LEEWAY_SECONDS > options.now) return undefined;
  return { sub, role, sid, iss, aud, iat, exp, jti };
}
