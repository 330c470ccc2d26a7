// A bundle's payload: its events' encoded messages one after another, each preceded by its length
// as a varint (protobuf's length-delimited form, so any protobuf tool can read one too).

/** The messages as one payload. */
export function joinBundle(messages: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const m of messages) size += varintSize(m.byteLength) + m.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const m of messages) {
    let n = m.byteLength;
    while (n > 0x7f) {
      out[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[at++] = n;
    out.set(m, at);
    at += m.byteLength;
  }
  return out;
}

/** The messages of a payload, as views into it; throws when it is not exactly `count` of them. */
export function splitBundle(payload: Uint8Array, count: number): Uint8Array[] {
  const messages: Uint8Array[] = [];
  let at = 0;
  while (at < payload.byteLength) {
    let length = 0;
    let shift = 0;
    for (;;) {
      if (at >= payload.byteLength || shift > 28) throw new Error("outbox bundle: a length runs past the payload");
      const byte = payload[at++]!;
      length |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
      shift += 7;
    }
    if (at + length > payload.byteLength) throw new Error("outbox bundle: a message runs past the payload");
    messages.push(payload.subarray(at, at + length));
    at += length;
  }
  if (messages.length !== count) throw new Error(`outbox bundle: ${messages.length} messages for ${count} event ids`);
  return messages;
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n >>>= 7;
    size++;
  }
  return size;
}
