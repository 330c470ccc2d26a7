// Stripe-Signature: `t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…][,v0=…]`, the HMAC of
// `<t>.<raw body>` keyed with the whole `whsec_…` endpoint secret. Any v1 may match (Stripe sends
// one per active secret while a secret is rolled); the comparison takes constant time.
import { createHmac, timingSafeEqual } from "node:crypto";
import { InvalidSignatureError } from "./errors.js";

/**
 * Checks a webhook's `Stripe-Signature` header against its raw body (the bytes as received, not a
 * re-serialisation). Answers the signed timestamp; throws InvalidSignatureError, whose message
 * names what failed and never the secret or a signature.
 */
export function verifyStripeSignature(
  header: string | undefined | null,
  rawBody: Uint8Array | string,
  secret: string,
  toleranceSeconds: number,
  now: Date = new Date(),
): Date {
  if (!secret) throw new TypeError("the webhook secret is not configured");
  if (!header) throw new InvalidSignatureError("the Stripe-Signature header is missing");
  let timestamp: string | undefined;
  const candidates: Buffer[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t" && timestamp === undefined) timestamp = value;
    else if (key === "v1" && /^[0-9a-fA-F]{64}$/.test(value)) candidates.push(Buffer.from(value, "hex"));
  }
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp))
    throw new InvalidSignatureError("the Stripe-Signature header has no valid timestamp");
  if (candidates.length === 0) throw new InvalidSignatureError("the Stripe-Signature header has no v1 signature");
  const expected = createHmac("sha256", secret)
    .update(`${timestamp}.`, "utf8")
    .update(typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody)
    .digest();
  // Every candidate is compared, so the time taken says nothing about which one matched.
  let matched = false;
  for (const candidate of candidates) if (timingSafeEqual(candidate, expected)) matched = true;
  if (!matched) throw new InvalidSignatureError("no v1 signature of the Stripe-Signature header matches the body");
  const signedAt = Number(timestamp);
  if (Math.abs(now.getTime() / 1000 - signedAt) > toleranceSeconds) {
    throw new InvalidSignatureError(`the Stripe-Signature timestamp is more than ${toleranceSeconds} s from now`);
  }
  return new Date(signedAt * 1000);
}
