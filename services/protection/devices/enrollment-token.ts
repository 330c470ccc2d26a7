// Enrollment tokens: `enr_` + 43 base64url characters (32 random bytes), stored as their SHA-256,
// and sealed with AES-256-GCM while pending so the creator's QR code can show the token again.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

export const ENROLLMENT_TOKEN = /^enr_[A-Za-z0-9_-]{43}$/;

export function newEnrollmentToken(): string {
  return `enr_${randomBytes(32).toString("base64url")}`;
}

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** base64url(iv ‖ tag ‖ ciphertext). */
export function sealToken(key: Buffer, token: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(token, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** The token, or undefined when the seal was made with another key (the CA changed). */
export function unsealToken(key: Buffer, sealed: string): string | undefined {
  try {
    const bytes = Buffer.from(sealed, "base64url");
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
