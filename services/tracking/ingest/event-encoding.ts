// tracking.v1.ObservationRecorded, encoded by hand: one event per stored observation makes the
// generic reflection-based toBinary the largest single cost of a bulk chunk. The bytes are exactly
// those of toBinary(ObservationRecordedSchema, ...) — fields in number order, implicit fields
// left out at their zero value (a double only at +0), optional ones written whenever set — which
// event-encoding.test.ts checks against toBinary. Anything outside the plain case (a time before
// 1970 or past 2^53 s) falls back to toBinary itself.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ObservationRecordedSchema } from "../../../gen/tracking/v1/events_pb.js";
import { toObservation } from "../mappers/to-message.js";
import type { ObservationRow } from "../store/observation-entity.js";

/** The encoded tracking.v1.ObservationRecorded { event_id, occurred_at, observation }. */
export function encodeObservationRecorded(eventId: string, occurredAt: Date, row: ObservationRow): Uint8Array {
  const occurred = timeParts(occurredAt);
  const observed = timeParts(row.observedAt);
  const received = timeParts(row.receivedAt);
  if (!occurred || !observed || !received) return encodeGeneric(eventId, occurredAt, row);

  const idLen = Buffer.byteLength(row.id);
  const deviceLen = Buffer.byteLength(row.deviceId);
  const sourceLen = Buffer.byteLength(row.source);
  const metadataLen = row.metadata === null ? -1 : Buffer.byteLength(row.metadata);
  const observedLen = timestampLength(observed);
  const receivedLen = timestampLength(received);
  const observationLen =
    stringField(idLen) +
    stringField(deviceLen) +
    1 +
    varintLength(observedLen) +
    observedLen +
    (Object.is(row.latitude, 0) ? 0 : 9) +
    (Object.is(row.longitude, 0) ? 0 : 9) +
    (row.altitude === null ? 0 : 9) +
    (row.accuracyMeters === null ? 0 : 9) +
    (row.speedKmh === null ? 0 : 9) +
    (row.headingDegrees === null ? 0 : 9) +
    (metadataLen < 0 ? 0 : 1 + varintLength(metadataLen) + metadataLen) +
    stringField(sourceLen) +
    1 +
    varintLength(receivedLen) +
    receivedLen;
  const eventIdLen = Buffer.byteLength(eventId);
  const occurredLen = timestampLength(occurred);
  const total = stringField(eventIdLen) + 1 + varintLength(occurredLen) + occurredLen + 1 + varintLength(observationLen) + observationLen;

  const w = new Writer(total);
  w.string(0x0a, eventId, eventIdLen); // 1 event_id
  w.timestamp(0x12, occurred, occurredLen); // 2 occurred_at
  w.byte(0x1a); // 3 observation
  w.varint(observationLen);
  w.string(0x0a, row.id, idLen); // 1 id
  w.string(0x12, row.deviceId, deviceLen); // 2 device_id
  w.timestamp(0x1a, observed, observedLen); // 3 observed_at
  if (!Object.is(row.latitude, 0)) w.double(0x21, row.latitude); // 4 latitude
  if (!Object.is(row.longitude, 0)) w.double(0x29, row.longitude); // 5 longitude
  if (row.altitude !== null) w.double(0x31, row.altitude); // 6 altitude
  if (row.accuracyMeters !== null) w.double(0x39, row.accuracyMeters); // 7 accuracy_meters
  if (row.speedKmh !== null) w.double(0x41, row.speedKmh); // 8 speed_kmh
  if (row.headingDegrees !== null) w.double(0x49, row.headingDegrees); // 9 heading_degrees
  if (row.metadata !== null) w.stringAlways(0x52, row.metadata, metadataLen); // 10 metadata (optional: even "")
  w.string(0x5a, row.source, sourceLen); // 11 source
  w.timestamp(0x62, received, receivedLen); // 12 received_at
  return w.done();
}

/** The reference encoding, used for the unusual cases and by the test. */
export function encodeGeneric(eventId: string, occurredAt: Date, row: ObservationRow): Uint8Array {
  return toBinary(
    ObservationRecordedSchema,
    create(ObservationRecordedSchema, { eventId, occurredAt: timestampFromDate(occurredAt), observation: toObservation(row) }),
  );
}

interface TimeParts {
  seconds: number;
  nanos: number;
}

/** timestampFromDate's seconds and nanos, when they are in the plain range. */
function timeParts(date: Date): TimeParts | undefined {
  const ms = date.getTime();
  const seconds = Math.floor(ms / 1000);
  if (!(seconds >= 0 && seconds <= Number.MAX_SAFE_INTEGER)) return undefined;
  return { seconds, nanos: (ms - seconds * 1000) * 1_000_000 };
}

function timestampLength(t: TimeParts): number {
  return (t.seconds === 0 ? 0 : 1 + varintLength(t.seconds)) + (t.nanos === 0 ? 0 : 1 + varintLength(t.nanos));
}

/** A proto3 string with implicit presence: absent when empty. */
function stringField(byteLength: number): number {
  return byteLength === 0 ? 0 : 1 + varintLength(byteLength) + byteLength;
}

/** Bytes of a non-negative integer up to 2^53 as a varint. */
function varintLength(value: number): number {
  let n = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

class Writer {
  private readonly buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  varint(value: number): void {
    while (value >= 128) {
      this.buf[this.pos++] = (value % 128) | 0x80;
      value = Math.floor(value / 128);
    }
    this.buf[this.pos++] = value;
  }

  string(tag: number, value: string, byteLength: number): void {
    if (byteLength > 0) this.stringAlways(tag, value, byteLength);
  }

  stringAlways(tag: number, value: string, byteLength: number): void {
    this.byte(tag);
    this.varint(byteLength);
    this.pos += this.buf.write(value, this.pos, byteLength, "utf8");
  }

  double(tag: number, value: number): void {
    this.byte(tag);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  timestamp(tag: number, t: TimeParts, length: number): void {
    this.byte(tag);
    this.varint(length);
    if (t.seconds !== 0) {
      this.byte(0x08);
      this.varint(t.seconds);
    }
    if (t.nanos !== 0) {
      this.byte(0x10);
      this.varint(t.nanos);
    }
  }

  done(): Uint8Array {
    if (this.pos !== this.buf.length) throw new Error(`observation event encoding: wrote ${this.pos} of ${this.buf.length} bytes`);
    return this.buf;
  }
}
