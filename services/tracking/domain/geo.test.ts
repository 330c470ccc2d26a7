// Distances and the boxes the geofence index stores, including the awkward places: the
// antimeridian, the poles and circles larger than a hemisphere.
import test from "ava";
import { circleBoxes, haversineMeters, isNullIsland, type GeoBox } from "./geo.js";

const inBoxes = (boxes: GeoBox[], lat: number, lon: number) =>
  boxes.some((b) => lon >= b.minX && lon <= b.maxX && lat >= b.minY && lat <= b.maxY);

test("haversine: known distances", (t) => {
  t.is(haversineMeters(51.5, -0.1, 51.5, -0.1), 0);
  // One degree of latitude is about 111.2 km on a 6371 km sphere.
  t.true(Math.abs(haversineMeters(0, 10, 1, 10) - 111_195) < 1);
  // London to Paris, about 344 km.
  t.true(Math.abs(haversineMeters(51.5074, -0.1278, 48.8566, 2.3522) - 343_500) < 1_000);
  // Across the antimeridian the short way round.
  t.true(haversineMeters(0, 179.999, 0, -179.999) < 250);
  // Antipodes: half the circumference, not NaN.
  t.true(Math.abs(haversineMeters(0, 0, 0, 180) - Math.PI * 6_371_000) < 1);
});

test("null island: within 10 km of 0,0", (t) => {
  t.true(isNullIsland(0, 0));
  t.true(isNullIsland(0.05, 0.05));
  t.false(isNullIsland(0.1, 0));
  t.false(isNullIsland(51.5, -0.1));
});

test("a small circle has one box that holds the circle and little else", (t) => {
  const boxes = circleBoxes(51.5, -0.1, 1000);
  t.is(boxes.length, 1);
  const [box] = boxes;
  // 1000 m is about 0.009 degrees of latitude and 0.0144 of longitude at 51.5 N.
  t.true(Math.abs(box!.maxY - 51.5 - 0.008993) < 1e-5);
  t.true(Math.abs(box!.maxX - -0.1 - 0.014447) < 1e-4);
  // Every point on the circle's edge is in the box.
  for (let bearing = 0; bearing < 360; bearing += 15) {
    const [lat, lon] = destination(51.5, -0.1, 999.9, bearing);
    t.true(inBoxes(boxes, lat, lon), `bearing ${bearing}`);
  }
});

test("a circle across the antimeridian is split into two boxes", (t) => {
  const boxes = circleBoxes(-16.5, 179.99, 5000);
  t.is(boxes.length, 2);
  t.true(inBoxes(boxes, -16.5, -179.98), "the far side of the seam");
  t.true(inBoxes(boxes, -16.5, 179.96));
  t.false(inBoxes(boxes, -16.5, 0));
  const west = circleBoxes(10, -179.995, 2000);
  t.is(west.length, 2);
  t.true(inBoxes(west, 10, 179.995));
});

test("a circle over a pole takes every longitude", (t) => {
  const boxes = circleBoxes(89.99, 0, 5000);
  t.is(boxes.length, 1);
  t.is(boxes[0]!.minX, -180);
  t.is(boxes[0]!.maxX, 180);
  t.is(boxes[0]!.maxY, 90);
  t.true(inBoxes(boxes, 89.99, 180), "the other side of the pole is within 5 km");
  t.true(haversineMeters(89.99, 0, 89.99, 180) < 5000);
});

test("a huge circle is not too narrow: the exact cap half-width, not radius / cos(lat)", (t) => {
  // 5000 km from 20 N: the widest point of the circle lies north of its centre, about 48.8
  // degrees east, where radius / cos(lat) would give only 47.9.
  const boxes = circleBoxes(20, 0, 5_000_000);
  t.is(boxes.length, 1);
  t.true(boxes[0]!.maxX > 48.7);
  for (let bearing = 0; bearing < 360; bearing += 2) {
    const [lat, lon] = destination(20, 0, 4_999_000, bearing);
    t.true(inBoxes(boxes, lat, lon), `bearing ${bearing}`);
  }
  t.deepEqual(circleBoxes(0, 0, 30_000_000), [{ minX: -180, minY: -90, maxX: 180, maxY: 90 }], "bigger than the Earth");
});

/** The point `meters` from a start along a bearing on the same sphere (for building edge cases). */
function destination(lat: number, lon: number, meters: number, bearingDeg: number): [number, number] {
  const r = Math.PI / 180;
  const d = meters / 6_371_000;
  const b = bearingDeg * r;
  const p1 = lat * r;
  const p2 = Math.asin(Math.sin(p1) * Math.cos(d) + Math.cos(p1) * Math.sin(d) * Math.cos(b));
  const l2 = lon * r + Math.atan2(Math.sin(b) * Math.sin(d) * Math.cos(p1), Math.cos(d) - Math.sin(p1) * Math.sin(p2));
  return [p2 / r, ((((l2 / r + 540) % 360) + 360) % 360) - 180];
}
