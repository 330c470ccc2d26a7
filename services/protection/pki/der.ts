// The little DER this CA needs: building the TLVs of certificates and CRLs, and reading the
// top-level structure of certificates and certificate requests. Strict: a length that runs past
// its parent, a non-minimal length or trailing bytes are refused, not guessed at.

export const tag = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

export function tlv(tagByte: number, content: Uint8Array): Buffer {
  const length = content.length;
  let header: number[];
  if (length < 0x80) header = [tagByte, length];
  else {
    const bytes: number[] = [];
    for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
    header = [tagByte, 0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from(header), content]);
}

export const sequence = (...parts: Uint8Array[]) => tlv(tag.sequence, Buffer.concat(parts));
export const set = (...parts: Uint8Array[]) => tlv(tag.set, Buffer.concat(parts));
/** `[n]` wrapping DER (EXPLICIT, or IMPLICIT of a constructed type). */
export const contextConstructed = (n: number, ...parts: Uint8Array[]) => tlv(0xa0 | n, Buffer.concat(parts));
/** `[n] IMPLICIT` of a primitive type. */
export const contextPrimitive = (n: number, content: Uint8Array) => tlv(0x80 | n, content);
export const octetString = (content: Uint8Array) => tlv(tag.octetString, content);
export const utf8String = (text: string) => tlv(tag.utf8String, Buffer.from(text, "utf8"));
export const boolean = (value: boolean) => tlv(tag.boolean, Buffer.from([value ? 0xff : 0]));
export const nullValue = () => tlv(tag.null, Buffer.alloc(0));

/** A BIT STRING of whole bytes (keys, signatures). */
export const bitString = (content: Uint8Array) => tlv(tag.bitString, Buffer.concat([Buffer.from([0]), content]));

/** A BIT STRING of named bits (key usage), bit 0 first, trailing zero bits dropped as DER wants. */
export function namedBits(bits: readonly number[]): Buffer {
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const unused = 7 - (highest & 7);
  return tlv(tag.bitString, Buffer.concat([Buffer.from([unused]), bytes]));
}

/** A non-negative INTEGER, minimally encoded. */
export function integer(value: bigint | number): Buffer {
  let n = BigInt(value);
  if (n < 0n) throw new RangeError("only non-negative integers are encoded here");
  const bytes: number[] = [];
  do {
    bytes.unshift(Number(n & 0xffn));
    n >>= 8n;
  } while (n > 0n);
  if (bytes[0]! & 0x80) bytes.unshift(0);
  return tlv(tag.integer, Buffer.from(bytes));
}

/** An INTEGER from its unsigned big-endian bytes (a serial number). */
export function integerFromBytes(bytes: Uint8Array): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = Buffer.from(bytes.subarray(start));
  return tlv(tag.integer, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map((a) => BigInt(a));
  if (arcs.length < 2) throw new RangeError(`bad object identifier ${dotted}`);
  const out: number[] = [];
  const push = (arc: bigint) => {
    const chunk: number[] = [Number(arc & 0x7fn)];
    for (let rest = arc >> 7n; rest > 0n; rest >>= 7n) chunk.unshift(Number(rest & 0x7fn) | 0x80);
    out.push(...chunk);
  };
  push(arcs[0]! * 40n + arcs[1]!);
  for (const arc of arcs.slice(2)) push(arc);
  return tlv(tag.oid, Buffer.from(out));
}

/** UTCTime through 2049, GeneralizedTime after, as RFC 5280 says; whole seconds, UTC. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = date.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(tag.utcTime, Buffer.from(digits.slice(2), "ascii"));
  return tlv(tag.generalizedTime, Buffer.from(digits, "ascii"));
}

/** One element read from a DER buffer. */
export interface DerNode {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  /** Offset of the content. */
  contentStart: number;
  /** Offset just past the content. */
  end: number;
}

export class DerError extends Error {
  override name = "DerError";
}

export function readNode(buf: Uint8Array, offset: number, limit = buf.length): DerNode {
  if (offset + 2 > limit) throw new DerError("truncated DER");
  const tagByte = buf[offset]!;
  if ((tagByte & 0x1f) === 0x1f) throw new DerError("multi-byte DER tags are not used here");
  let length = buf[offset + 1]!;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new DerError("unsupported DER length");
    if (contentStart + count > limit) throw new DerError("truncated DER");
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buf[contentStart + i]!;
    if (length < 0x80 || buf[contentStart] === 0) throw new DerError("non-minimal DER length");
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) throw new DerError("DER length runs past its container");
  return { tag: tagByte, start: offset, contentStart, end };
}

/** The elements inside a constructed node, which must fill it exactly. */
export function children(buf: Uint8Array, node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  for (let at = node.contentStart; at < node.end; ) {
    const child = readNode(buf, at, node.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** The one element a buffer holds, refusing trailing bytes. */
export function readWhole(buf: Uint8Array): DerNode {
  const node = readNode(buf, 0);
  if (node.end !== buf.length) throw new DerError("trailing bytes after the DER element");
  return node;
}

export function expectTag(node: DerNode | undefined, expected: number, what: string): DerNode {
  if (!node || node.tag !== expected) throw new DerError(`${what} is missing or malformed`);
  return node;
}

export const bytesOf = (buf: Uint8Array, node: DerNode) => Buffer.from(buf.subarray(node.start, node.end));
export const contentOf = (buf: Uint8Array, node: DerNode) => Buffer.from(buf.subarray(node.contentStart, node.end));

export function readOid(buf: Uint8Array, node: DerNode): string {
  const content = contentOf(buf, expectTag(node, tag.oid, "object identifier"));
  const arcs: bigint[] = [];
  let value = 0n;
  for (const byte of content) {
    value = (value << 7n) | BigInt(byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0n;
    }
  }
  if (arcs.length === 0) throw new DerError("empty object identifier");
  const first = arcs[0]!;
  const head = first < 80n ? [first / 40n, first % 40n] : [2n, first - 80n];
  return [...head, ...arcs.slice(1)].join(".");
}

/** PEM → DER for one of `labels`; undefined when the text holds no such block or bad base64. */
export function pemToDer(text: string, labels: readonly string[]): Buffer | undefined {
  for (const label of labels) {
    const match = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(text);
    if (!match) continue;
    const body = match[1]!.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return undefined;
    return Buffer.from(body, "base64");
  }
  return undefined;
}

export function derToPem(der: Uint8Array, label: string): string {
  const lines =
    Buffer.from(der)
      .toString("base64")
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
