// Standard Webhooks signing: `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, keyed with
// the base64-decoded secret after its `whsec_` prefix.
import { createHmac } from "node:crypto";

const prefix = "whsec_";
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

/** The key bytes of a secret (`whsec_` prefix optional), or undefined when it is not base64. */
export function decodeSecret(secret: string): Buffer | undefined {
  const encoded = secret.trim().startsWith(prefix) ? secret.trim().slice(prefix.length) : secret.trim();
  if (encoded === "" || !base64.test(encoded)) return undefined;
  return Buffer.from(encoded, "base64");
}

export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature"?: string;
}

/** The headers of one attempt; without a key (signing off) the id and timestamp still go out for dedupe. */
export function webhookHeaders(id: string, timestampSeconds: number, body: string, key: Buffer | undefined): SignedHeaders {
  const timestamp = String(timestampSeconds);
  const headers: SignedHeaders = { "webhook-id": id, "webhook-timestamp": timestamp };
  if (key) headers["webhook-signature"] = sign(key, id, timestamp, body);
  return headers;
}

export function sign(key: Buffer, id: string, timestamp: string, body: string): string {
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`;
}
