// Geofence rules: enter on the plain distance, leave only when the accuracy disc is outside, and
// the fence body checks.
import test from "ava";
import { checkGeofenceInput, evaluateFences, isInside, type FenceShape } from "./geofence-rule.js";

// 0.001 degrees of latitude is about 111.2 m.
const fence: FenceShape = { id: "f1", centerLatitude: 51.5, centerLongitude: -0.1, radiusMeters: 500 };
const fixAt = (metersNorth: number, accuracyMeters: number | null = null) => ({
  latitude: 51.5 + metersNorth / 111_195,
  longitude: -0.1,
  accuracyMeters,
});

test("entering uses distance <= radius, whatever the accuracy", (t) => {
  t.true(isInside(fence, fixAt(499), false).inside);
  t.false(isInside(fence, fixAt(501), false).inside);
  t.false(isInside(fence, fixAt(520, 100), false).inside, "a fuzzy fix just outside does not enter");
});

test("leaving needs distance - accuracy > radius", (t) => {
  t.true(isInside(fence, fixAt(520), true).inside === false, "exact fix outside: left");
  t.true(isInside(fence, fixAt(520, 30), true).inside, "20 m out with 30 m accuracy: still inside");
  t.false(isInside(fence, fixAt(540, 30), true).inside, "40 m out with 30 m accuracy: left");
  t.true(isInside(fence, fixAt(529, 30), true).inside, "just within radius + accuracy: not yet out");
  t.false(isInside(fence, fixAt(520, -50), true).inside, "a negative accuracy counts as exact");
});

test("transitions only on change; first fix inside enters, first fix outside is nothing", (t) => {
  const other: FenceShape = { id: "f2", centerLatitude: 51.5, centerLongitude: -0.1, radiusMeters: 2000 };
  const none = () => false;
  t.deepEqual(
    evaluateFences(fixAt(1000), [fence, other], none).map((x) => [x.fence.id, x.type]),
    [["f2", "Enter"]],
  );
  t.deepEqual(
    evaluateFences(fixAt(100), [fence, other], none).map((x) => [x.fence.id, x.type]),
    [
      ["f1", "Enter"],
      ["f2", "Enter"],
    ],
  );
  t.deepEqual(
    evaluateFences(fixAt(100), [fence, other], () => true),
    [],
    "staying inside",
  );
  t.deepEqual(evaluateFences(fixAt(5000), [fence], none), [], "outside, and was outside");
  t.deepEqual(
    evaluateFences(fixAt(5000), [fence, fence], () => true).map((x) => x.type),
    ["Exit"],
    "a fence listed twice counts once",
  );
});

test("geofence body: ranges, radius > 0, isActive defaults to true", (t) => {
  const ok = checkGeofenceInput({ name: "depot", centerLatitude: 51.5, centerLongitude: -0.1, radiusMeters: 250 });
  t.deepEqual(ok.fields, {
    name: "depot",
    description: null,
    centerLatitude: 51.5,
    centerLongitude: -0.1,
    radiusMeters: 250,
    isActive: true,
  });
  const bad = checkGeofenceInput({ centerLatitude: 95, centerLongitude: -181, radiusMeters: 0 });
  t.deepEqual(
    bad.semantic.map((v) => v.field),
    ["geofence.center_latitude", "geofence.center_longitude", "geofence.radius_meters"],
  );
  t.deepEqual(
    checkGeofenceInput({ centerLatitude: 1, centerLongitude: 1, radiusMeters: -5 }).semantic.map((v) => v.field),
    ["geofence.radius_meters"],
  );
  const malformed = checkGeofenceInput({
    centerLatitude: Number.NaN,
    centerLongitude: 1,
    radiusMeters: Number.POSITIVE_INFINITY,
    name: "x".repeat(201),
  });
  t.deepEqual(malformed.malformed.map((v) => v.field).sort(), ["geofence.center_latitude", "geofence.name", "geofence.radius_meters"]);
  t.false(checkGeofenceInput({ centerLatitude: 1, centerLongitude: 1, radiusMeters: 5, isActive: false }).fields!.isActive);
});
