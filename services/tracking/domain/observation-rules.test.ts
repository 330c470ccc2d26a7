// The observation rules, table by table: what passes, and which field each refusal names with
// which kind (malformed → 400, semantic → 422).
import test from "ava";
import { checkObservation, maxFutureSkewMs } from "./observation-rules.js";
import type { ObservationInputLike } from "./observation-types.js";

const now = new Date("2026-06-01T12:00:00Z");
const at = (ms: number) => ({ seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
const deviceId = "0b0e9c9e-8a55-4d8e-9f7e-6b1f4c3f2a10";
const good: ObservationInputLike = { deviceId, observedAt: at(now.getTime() - 1000), latitude: 51.5, longitude: -0.1 };
const check = (input: ObservationInputLike, resolveIdentifier = false, prefix = "observation.") =>
  checkObservation(input, { now, resolveIdentifier, prefix });

test("a plain observation passes with every optional field null", (t) => {
  const { value, malformed, semantic } = check(good);
  t.deepEqual([malformed, semantic], [[], []]);
  t.deepEqual(value, {
    device: { kind: "id", id: deviceId },
    observedAt: new Date(now.getTime() - 1000),
    latitude: 51.5,
    longitude: -0.1,
    altitude: null,
    accuracyMeters: null,
    speedKmh: null,
    headingDegrees: null,
    metadata: null,
  });
});

test("boundaries that pass: the poles, ±180, speed 0 and 5000, 5 minutes ahead exactly", (t) => {
  for (const extra of [
    { latitude: 90, longitude: 180 },
    { latitude: -90, longitude: -180 },
    { speedKmh: 0 },
    { speedKmh: 5000 },
    { headingDegrees: 0, accuracyMeters: 0 },
    { headingDegrees: 360 },
    { observedAt: at(now.getTime() + maxFutureSkewMs) },
    { latitude: 0.1, longitude: 0 }, // 11 km from 0,0
  ]) {
    const r = check({ ...good, ...extra });
    t.truthy(
      r.value,
      JSON.stringify(extra, (_, v) => (typeof v === "bigint" ? String(v) : v)),
    );
  }
});

test("semantic refusals (422) name the field", (t) => {
  const cases: [Partial<ObservationInputLike>, string[]][] = [
    [{ latitude: 90.0001 }, ["observation.latitude"]],
    [{ latitude: -91 }, ["observation.latitude"]],
    [{ longitude: 180.5 }, ["observation.longitude"]],
    [{ latitude: 0.01, longitude: -0.02 }, ["observation.latitude", "observation.longitude"]],
    [{ latitude: 0, longitude: 0 }, ["observation.latitude", "observation.longitude"]],
    [{ speedKmh: -1 }, ["observation.speed_kmh"]],
    [{ speedKmh: 5000.1 }, ["observation.speed_kmh"]],
    [{ observedAt: at(now.getTime() + maxFutureSkewMs + 1000) }, ["observation.observed_at"]],
    [{ accuracyMeters: -3 }, ["observation.accuracy_meters"]],
    [{ headingDegrees: 361 }, ["observation.heading_degrees"]],
  ];
  for (const [extra, fields] of cases) {
    const r = check({ ...good, ...extra });
    t.is(r.value, undefined);
    t.deepEqual(r.malformed, []);
    t.deepEqual(
      r.semantic.map((v) => v.field),
      fields,
      JSON.stringify(Object.keys(extra)),
    );
  }
});

test("malformed input (400): missing, not finite, bad uuid, no device at all", (t) => {
  const cases: [ObservationInputLike, string[]][] = [
    [{ ...good, deviceId: "nope" }, ["observation.device_id"]],
    [{ ...good, deviceId: undefined }, ["observation.device_id"]],
    [{ ...good, latitude: Number.NaN }, ["observation.latitude"]],
    [{ ...good, speedKmh: Number.POSITIVE_INFINITY }, ["observation.speed_kmh"]],
    [{ deviceId }, ["observation.observed_at", "observation.latitude", "observation.longitude"]],
  ];
  for (const [input, fields] of cases) {
    const r = check(input);
    t.is(r.value, undefined);
    t.deepEqual(
      r.malformed.map((v) => v.field),
      fields,
    );
  }
});

test("device reference: id first; identifier only where the path allows it", (t) => {
  const byIdentifier = { ...good, deviceId: undefined, deviceIdentifier: "van-7" };
  t.deepEqual(check(byIdentifier, true).value?.device, { kind: "identifier", identifier: "van-7" });
  t.deepEqual(
    check(byIdentifier, false).malformed.map((v) => v.field),
    ["observation.device_id"],
    "create wants deviceId",
  );
  t.deepEqual(
    check({ ...byIdentifier, deviceId: deviceId.toUpperCase() }, true).value?.device,
    { kind: "id", id: deviceId },
    "deviceId wins, lower-cased",
  );
  t.deepEqual(check({ ...byIdentifier, deviceId: "" }, true).value?.device.kind, "identifier", "an empty deviceId counts as absent");
  t.deepEqual(
    check({ ...good, deviceId: undefined, deviceIdentifier: "  " }, true).malformed.map((v) => v.field),
    ["observation.device_id"],
  );
});

test("bulk items use paths relative to the item", (t) => {
  t.deepEqual(
    check({ ...good, latitude: 100 }, true, "").semantic.map((v) => v.field),
    ["latitude"],
  );
});

test("observedAt keeps millisecond precision (what dedupe and ordering compare)", (t) => {
  const r = check({ ...good, observedAt: { seconds: BigInt(Math.floor(now.getTime() / 1000) - 10), nanos: 123_456_789 } });
  t.is(r.value?.observedAt.getTime(), now.getTime() - 10_000 + 123);
});
