// Encoding and crypto tools (all tier A, no side effects): base64 (URL-safe without padding on
// request; decoding takes both alphabets), percent-encoding as encodeURIComponent, JWT decoding
// without verification, hashes in lowercase hex, and version 4 UUIDs one per line.
import { createHash, randomUUID } from "node:crypto";
import { type ToolSpec, ToolError } from "../tool.js";

export const HASH_ALGORITHMS = ["sha256", "sha512", "sha384", "sha1", "md5"] as const;
const MAX_GUIDS = 20;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Bytes of standard or URL-safe base64, padded or not; whitespace ignored. */
export function base64Bytes(encoded: string, what = "the text"): Buffer {
  const compact = encoded.replace(/\s+/g, "");
  const standard = compact.replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(standard) || standard.replace(/=+$/, "").length % 4 === 1) {
    throw new ToolError(`${what} is not base64 (standard or URL-safe)`);
  }
  return Buffer.from(standard, "base64");
}

function text(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return `(not UTF-8 text: ${bytes.length} bytes, hex ${bytes.toString("hex")})`;
  }
}

function jsonPart(part: string, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(base64Bytes(part, `the JWT ${name}`)));
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError(`the JWT ${name} is not base64url-encoded JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ToolError(`the JWT ${name} is not a JSON object`);
  return value as Record<string, unknown>;
}

const TIME_CLAIMS = ["exp", "iat", "nbf"] as const;

/** `{ header, payload, claims, signatureVerified: false }`; times in claims as ISO 8601 (UTC). */
export function decodeJwt(token: string, now = Date.now()): Record<string, unknown> {
  const parts = token.trim().split(".");
  if (parts.length !== 3 || parts[0] === "" || parts[1] === "") {
    throw new ToolError("token is not a JWT (three base64url parts separated by dots)");
  }
  const header = jsonPart(parts[0]!, "header");
  const payload = jsonPart(parts[1]!, "payload");
  const claims: Record<string, unknown> = {};
  for (const name of ["sub", "iss", "aud"] as const) if (payload[name] !== undefined) claims[name] = payload[name];
  for (const name of TIME_CLAIMS) {
    const seconds = payload[name];
    if (typeof seconds === "number" && Number.isFinite(seconds)) {
      const date = new Date(seconds * 1000);
      claims[name] = Number.isNaN(date.getTime()) ? seconds : date.toISOString();
    }
  }
  if (typeof payload.exp === "number") claims.expired = payload.exp * 1000 <= now;
  return { header, payload, claims, signatureVerified: false };
}

const str = (description: string) => ({ type: "string" as const, description });

export const encodingTools: ToolSpec[] = [
  {
    name: "encode_base64",
    description: "Encode text (UTF-8) as base64; urlSafe gives the URL-safe alphabet without padding.",
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        text: str("The text to encode."),
        urlSafe: { type: "boolean", default: false, description: "URL-safe alphabet (- and _), no padding." },
      },
      required: ["text"],
    },
    async run(args) {
      return Buffer.from(String(args.text), "utf8").toString(args.urlSafe === true ? "base64url" : "base64");
    },
  },
  {
    name: "decode_base64",
    description: "Decode base64 (standard or URL-safe, padded or not) to text.",
    tier: "A",
    parameters: { type: "object", properties: { encoded: str("The base64 text.") }, required: ["encoded"] },
    async run(args) {
      return text(base64Bytes(String(args.encoded), "encoded"));
    },
  },
  {
    name: "encode_url",
    description: "Percent-encode text as encodeURIComponent does.",
    tier: "A",
    parameters: { type: "object", properties: { text: str("The text to encode.") }, required: ["text"] },
    async run(args) {
      return encodeURIComponent(String(args.text));
    },
  },
  {
    name: "decode_url",
    description: "Decode percent-encoded text.",
    tier: "A",
    parameters: { type: "object", properties: { encoded: str("The percent-encoded text.") }, required: ["encoded"] },
    async run(args) {
      try {
        return decodeURIComponent(String(args.encoded));
      } catch {
        throw new ToolError("encoded is not valid percent-encoding (a % not followed by two hex digits, or not UTF-8)");
      }
    },
  },
  {
    name: "decode_jwt",
    description: "Decode a JWT: header, payload and the common claims (sub, iss, aud, exp, iat, nbf). The signature is not verified.",
    tier: "A",
    parameters: { type: "object", properties: { token: str("The JWT.") }, required: ["token"] },
    async run(args) {
      return decodeJwt(String(args.token));
    },
  },
  {
    name: "hash_compute",
    description: "Hash text (UTF-8) and answer the digest in lowercase hex.",
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        text: str("The text to hash."),
        algorithm: { type: "string", enum: [...HASH_ALGORITHMS], default: "sha256", description: "The hash algorithm." },
      },
      required: ["text"],
    },
    async run(args) {
      const algorithm = String(args.algorithm ?? "sha256").toLowerCase();
      if (!(HASH_ALGORITHMS as readonly string[]).includes(algorithm)) {
        throw new ToolError(`algorithm must be one of ${HASH_ALGORITHMS.join(", ")}`);
      }
      return createHash(algorithm).update(String(args.text), "utf8").digest("hex");
    },
  },
  {
    name: "generate_guid",
    description: `Generate version 4 UUIDs, one per line (count from 1 to ${MAX_GUIDS}).`,
    tier: "A",
    parameters: {
      type: "object",
      properties: { count: { type: "integer", default: 1, description: `How many (clamped to 1–${MAX_GUIDS}).` } },
    },
    async run(args) {
      const asked = typeof args.count === "number" && Number.isFinite(args.count) ? Math.trunc(args.count) : 1;
      const count = Math.min(MAX_GUIDS, Math.max(1, asked));
      return Array.from({ length: count }, () => randomUUID()).join("\n");
    },
  },
];
