// The gRPC-over-HTTP/2 wire format both ends of the mesh speak: length-prefixed messages, the
// grpc-timeout header, and the status a call ends with (grpc-status, grpc-message and
// google.rpc.Status in grpc-status-details-bin), as https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md has them.
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { StatusSchema } from "../../../gen/google/rpc/status_pb.js";

export const FRAME_HEADER_BYTES = 5;
// setTimeout's limit: a longer deadline would fire at once, so it counts as no deadline.
const MAX_TIMER_MS = 2 ** 31 - 1;
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000_001 };
/** Headers that belong to the protocol or the connection, never handed on as metadata. */
export const PROTOCOL_HEADERS = new Set(["content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding", "content-length"]);
const STATUS_HEADERS = new Set(["grpc-status", "grpc-message", "grpc-status-details-bin"]);

/** The call's deadline in milliseconds: undefined for none, a ConnectError for a malformed header. */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined | ConnectError {
  if (value === undefined) return undefined;
  const match = typeof value === "string" ? TIMEOUT.exec(value) : null;
  if (match === null) return new ConnectError(`protocol error: invalid grpc-timeout ${JSON.stringify(value)}`, Code.InvalidArgument);
  const ms = Number(match[1]) * TIMEOUT_UNIT_MS[match[2]!]!;
  if (ms > MAX_TIMER_MS) return undefined;
  // The transport reads zero as "no deadline": a deadline already due is one millisecond away.
  return Math.max(ms, 1);
}

/** grpc-message as the specification encodes it: percent-encoded UTF-8 outside 0x20-0x7E, and %. */
export function encodeGrpcMessage(message: string): string {
  // Most messages need nothing; the check costs less than rebuilding them.
  if (!/[^\x20-\x24\x26-\x7e]/.test(message)) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Trailers (or a trailers-only header block) for an error: status, message, details, metadata. */
export function errorTrailers(error: ConnectError): Record<string, string> {
  const out: Record<string, string> = {};
  error.metadata.forEach((value, key) => {
    if (!PROTOCOL_HEADERS.has(key)) out[key] = value;
  });
  out["grpc-status"] = String(error.code);
  out["grpc-message"] = encodeGrpcMessage(error.rawMessage);
  if (error.details.length > 0) {
    const status = create(StatusSchema, {
      code: error.code,
      message: error.rawMessage,
      details: error.details.map((detail) =>
        "desc" in detail
          ? anyPack(detail.desc, create(detail.desc, detail.value))
          : { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value },
      ),
    });
    out["grpc-status-details-bin"] = Buffer.from(toBinary(StatusSchema, status)).toString("base64").replace(/=+$/, "");
  }
  return out;
}

/** grpc-timeout for a deadline `ms` away: whole milliseconds, or seconds when they do not fit in 8 digits. */
export function grpcTimeoutHeader(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole < 100_000_000 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}

/** The status a call ended with, from its trailers (or a trailers-only header block); undefined for OK. */
export function errorFromTrailers(trailers: Headers, httpStatus: number): ConnectError | undefined {
  const metadata = new Headers();
  trailers.forEach((value, key) => {
    if (!STATUS_HEADERS.has(key) && !PROTOCOL_HEADERS.has(key)) metadata.set(key, value);
  });
  const status = trailers.get("grpc-status");
  if (status === null) {
    return new ConnectError(
      httpStatus === 200 ? "protocol error: the call ended without a grpc-status" : `HTTP ${httpStatus}`,
      httpStatus === 200 ? Code.Internal : codeFromHttpStatus(httpStatus),
      metadata,
    );
  }
  if (status === "0") return undefined;
  const code = Number(status);
  const message = decodeGrpcMessage(trailers.get("grpc-message") ?? "");
  const error = new ConnectError(message, code in Code && code > 0 ? code : Code.Unknown, metadata);
  const details = trailers.get("grpc-status-details-bin");
  if (details !== null) {
    try {
      const decoded = fromBinary(StatusSchema, Buffer.from(details, "base64"));
      error.details = decoded.details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value }));
    } catch {
      // Undecodable details leave the code and message as they are.
    }
  }
  return error;
}

export function decodeGrpcMessage(value: string): string {
  if (!value.includes("%")) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** As https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.md maps them. */
function codeFromHttpStatus(status: number): Code {
  switch (status) {
    case 400:
      return Code.Internal;
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.Unimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code.Unavailable;
    default:
      return Code.Unknown;
  }
}

/** HTTP/2 headers as web Headers, without the pseudo-headers (`:path`, `:status`, ...). */
export function webHeaders(source: Readonly<Record<string, string | string[] | number | undefined>>, target = new Headers()): Headers {
  for (const key in source) {
    if (key.charCodeAt(0) === 58 /* ":" */) continue;
    const value = source[key];
    if (typeof value === "string") target.set(key, value);
    else if (Array.isArray(value)) for (const item of value) target.append(key, item);
  }
  return target;
}

/** Web Headers as HTTP/2 headers, leaving out the protocol's own (`into` keeps its entries). */
export function http2Headers(headers: Headers, into: Record<string, string> = {}): Record<string, string> {
  headers.forEach((value, key) => {
    if (!PROTOCOL_HEADERS.has(key)) into[key] = value;
  });
  return into;
}

export function frame(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bytes.byteLength);
  out[0] = 0;
  out.writeUInt32BE(bytes.byteLength, 1);
  out.set(bytes, FRAME_HEADER_BYTES);
  return out;
}

/** Splits received bytes into messages; a message announced bigger than the limit is refused at once. */
export class FrameReader {
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The complete messages the chunk finishes. */
  push(chunk: Buffer): Uint8Array[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.byteLength;
    const messages: Uint8Array[] = [];
    while (this.#pendingBytes >= FRAME_HEADER_BYTES) {
      const head = this.#pending.length === 1 ? this.#pending[0]! : this.#joined();
      const flags = head[0]!;
      const length = head.readUInt32BE(1);
      if (flags !== 0) {
        throw new ConnectError(
          flags & 1 ? "protocol error: a compressed message without grpc-encoding" : "protocol error: invalid frame flags",
          flags & 1 ? Code.Internal : Code.InvalidArgument,
        );
      }
      if (length > this.maxBytes) {
        throw new ConnectError(`message of ${length} bytes is larger than the limit of ${this.maxBytes}`, Code.ResourceExhausted);
      }
      if (this.#pendingBytes < FRAME_HEADER_BYTES + length) break;
      const all = this.#joined();
      messages.push(all.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length));
      const rest = all.subarray(FRAME_HEADER_BYTES + length);
      this.#pending = rest.byteLength ? [rest] : [];
      this.#pendingBytes = rest.byteLength;
    }
    return messages;
  }

  get partial(): boolean {
    return this.#pendingBytes > 0;
  }

  #joined(): Buffer {
    if (this.#pending.length > 1) this.#pending = [Buffer.concat(this.#pending, this.#pendingBytes)];
    return this.#pending[0]!;
  }
}
