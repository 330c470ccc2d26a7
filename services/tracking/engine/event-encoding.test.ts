// The hand-written ObservationRecorded encoding gives exactly toBinary's bytes, for every shape of
// row: optional fields set or not (zero included), signed zeros, non-ASCII text, times on whole
// seconds, before 1970 and far ahead.
import test from "ava";
import { randomUUID } from "node:crypto";
import type { ObservationRow } from "../store/observation-entity.js";
import { seededRandom } from "../../../test/support/seeded-random.js";
import { encodeGeneric, encodeObservationRecorded } from "./event-encoding.js";

const base = (): ObservationRow => ({
  id: randomUUID(),
  deviceId: randomUUID(),
  assetId: null,
  observedAt: new Date("2026-03-01T10:00:00.123Z"),
  latitude: 51.5074,
  longitude: -0.1278,
  altitude: null,
  accuracyMeters: null,
  speedKmh: null,
  headingDegrees: null,
  metadata: null,
  source: "ingest",
  receivedAt: new Date("2026-03-01T10:00:01.456Z"),
});

const same = (
  t: import("ava").ExecutionContext,
  row: ObservationRow,
  occurredAt = new Date("2026-03-01T10:00:02.789Z"),
  eventId: string = randomUUID(),
) => {
  const fast = Buffer.from(encodeObservationRecorded(eventId, occurredAt, row));
  const reference = Buffer.from(encodeGeneric(eventId, occurredAt, row));
  t.true(fast.equals(reference), `${JSON.stringify(row)}\n${fast.toString("hex")}\n${reference.toString("hex")}`);
};

test("the plain row and every optional field", (t) => {
  same(t, base());
  same(t, {
    ...base(),
    altitude: 35.5,
    accuracyMeters: 4,
    speedKmh: 88.2,
    headingDegrees: 270,
    metadata: '{"battery":81}',
    assetId: randomUUID(),
  });
  same(t, { ...base(), altitude: 0, accuracyMeters: 0, speedKmh: 0, headingDegrees: 0, metadata: "" }, undefined, undefined);
});

test("signed zeros, extremes and non-ASCII text", (t) => {
  same(t, { ...base(), latitude: 0, longitude: -0 });
  same(t, { ...base(), latitude: -0, longitude: 0 });
  same(t, { ...base(), latitude: -90, longitude: 180, speedKmh: 5000, altitude: -1e-300, headingDegrees: 360 });
  same(t, { ...base(), metadata: "Zürich — 東京 🚚", source: "integration" });
  same(t, { ...base(), metadata: "x".repeat(300) }, undefined, "e".repeat(200));
  same(t, { ...base(), source: "" });
});

test("times: whole seconds, the epoch, before 1970, far ahead", (t) => {
  same(t, { ...base(), observedAt: new Date("2026-03-01T10:00:00.000Z") }, new Date(0));
  same(t, { ...base(), observedAt: new Date(0), receivedAt: new Date(999) }, new Date(1));
  same(t, { ...base(), observedAt: new Date("1969-12-31T23:59:59.250Z") }, new Date(-86_400_000));
  same(t, { ...base(), receivedAt: new Date(8.64e15) }, new Date(8.64e15 - 1));
});

test("random rows", (t) => {
  const r = seededRandom(11);
  const maybe = (v: number) => (r() < 0.3 ? null : r() < 0.1 ? 0 : v);
  for (let i = 0; i < 2_000; i++) {
    same(
      t,
      {
        ...base(),
        observedAt: new Date(Math.floor(r() * 4e12)),
        receivedAt: new Date(Math.floor(r() * 4e12)),
        latitude: (r() - 0.5) * 180,
        longitude: (r() - 0.5) * 360,
        altitude: maybe((r() - 0.3) * 9000),
        accuracyMeters: maybe(r() * 100),
        speedKmh: maybe(r() * 5000),
        headingDegrees: maybe(r() * 360),
        metadata: r() < 0.5 ? null : "m".repeat(Math.floor(r() * 200)),
      },
      new Date(Math.floor(r() * 4e12)),
    );
  }
});
