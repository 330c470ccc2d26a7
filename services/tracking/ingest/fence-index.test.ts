// The geofence index: candidates by box, updates, deactivation, removal, and stale events that
// must not win over newer state.
import test from "ava";
import { FenceIndex, type FenceState } from "./fence-index.js";

const fence = (id: string, over: Partial<FenceState> = {}): FenceState => ({
  id,
  name: id,
  centerLatitude: 51.5,
  centerLongitude: -0.1,
  radiusMeters: 1000,
  isActive: true,
  updatedAt: new Date(1_000),
  ...over,
});
const ids = (index: FenceIndex, lat: number, lon: number) =>
  index
    .candidates(lat, lon)
    .map((f) => f.id)
    .sort();

test("a point finds the fences whose box holds it, and only those", (t) => {
  const index = new FenceIndex();
  index.apply(fence("a"));
  index.apply(fence("b", { centerLatitude: 51.52, radiusMeters: 3000 }));
  index.apply(fence("far", { centerLatitude: 40, centerLongitude: -3.7 }));
  t.deepEqual(ids(index, 51.5, -0.1), ["a", "b"]);
  t.deepEqual(ids(index, 51.54, -0.1), ["b"]);
  t.deepEqual(ids(index, 0, 0), []);
  t.is(index.size, 3);
});

test("a fence across the antimeridian is found from both sides, once", (t) => {
  const index = new FenceIndex();
  index.apply(fence("fiji", { centerLatitude: -16.5, centerLongitude: 180, radiusMeters: 10_000 }));
  t.deepEqual(ids(index, -16.5, 179.95), ["fiji"]);
  t.deepEqual(ids(index, -16.5, -179.95), ["fiji"]);
  t.deepEqual(ids(index, -16.5, 180), ["fiji"]);
});

test("update moves a fence; deactivation and removal take it out", (t) => {
  const index = new FenceIndex();
  index.apply(fence("a"));
  t.true(index.apply(fence("a", { centerLatitude: 48.85, centerLongitude: 2.35, updatedAt: new Date(2_000) })));
  t.deepEqual(ids(index, 51.5, -0.1), []);
  t.deepEqual(ids(index, 48.85, 2.35), ["a"]);
  index.apply(fence("a", { centerLatitude: 48.85, centerLongitude: 2.35, isActive: false, updatedAt: new Date(3_000) }));
  t.deepEqual(ids(index, 48.85, 2.35), []);
  t.is(index.size, 0);
  index.apply(fence("a", { isActive: true, updatedAt: new Date(4_000) }));
  t.deepEqual(ids(index, 51.5, -0.1), ["a"], "reactivated");
  index.remove("a");
  t.deepEqual(ids(index, 51.5, -0.1), []);
});

test("a late, older event never wins; nothing brings back a deleted fence", (t) => {
  const index = new FenceIndex();
  index.apply(fence("a", { isActive: false, updatedAt: new Date(5_000) }));
  t.false(index.apply(fence("a", { updatedAt: new Date(4_000) })), "the created event arriving after the deactivation");
  t.deepEqual(ids(index, 51.5, -0.1), []);
  index.apply(fence("b"));
  index.remove("b");
  t.false(index.apply(fence("b", { updatedAt: new Date(9_000) })));
  t.deepEqual(ids(index, 51.5, -0.1), []);
});

test("reconcile: the snapshot adds and drops, but keeps what changed while it was read", (t) => {
  const index = new FenceIndex();
  index.apply(fence("gone", { updatedAt: new Date(1_000) }));
  index.apply(fence("newer", { updatedAt: new Date(9_000) }));
  index.reconcile([fence("kept", { updatedAt: new Date(2_000) })], new Date(5_000));
  t.deepEqual(ids(index, 51.5, -0.1), ["kept", "newer"]);
  t.false(index.apply(fence("gone", { updatedAt: new Date(4_000) })), "an event older than the snapshot stays out");
});
