// The grid behind the fence index answers exactly what a scan of every box would: boxes within one
// cell, across cells, too large for the grid, at the edges of the map, after removals.
import test from "ava";
import { seededRandom } from "../../../test/support/seeded-random.js";
import type { GeoBox } from "../domain/geo.js";
import { BoxGrid } from "./box-grid.js";

const box = (minX: number, minY: number, maxX: number, maxY: number): GeoBox => ({ minX, minY, maxX, maxY });
const holds = (b: GeoBox, lon: number, lat: number) => b.minX <= lon && lon <= b.maxX && b.minY <= lat && lat <= b.maxY;
const sorted = (items: string[]) => [...items].sort();

test("a point finds the boxes that hold it, edges included, and no others", (t) => {
  const grid = new BoxGrid<string>();
  grid.insert(box(-0.1, 51.5, -0.095, 51.505), "small");
  grid.insert(box(-0.12, 51.49, -0.08, 51.52), "across cells");
  grid.insert(box(-0.094, 51.5, -0.09, 51.505), "beside");
  t.deepEqual(sorted(grid.search(-0.098, 51.502)), ["across cells", "small"]);
  t.deepEqual(sorted(grid.search(-0.095, 51.505)), ["across cells", "small"], "the corner counts");
  t.deepEqual(sorted(grid.search(-0.0945, 51.502)), ["across cells"], "between two boxes");
  t.deepEqual(sorted(grid.search(-0.081, 51.519)), ["across cells"], "a far cell of a box over several");
  t.deepEqual(grid.search(-0.079, 51.519), []);
});

test("boxes too wide for the grid are found and removed too", (t) => {
  const grid = new BoxGrid<string>();
  const wide = box(-2, 50, 2, 53);
  grid.insert(wide, "wide");
  grid.insert(box(-180, -90, 180, 90), "world");
  grid.insert(box(0, 51, 0.005, 51.005), "small");
  t.deepEqual(sorted(grid.search(0.001, 51.001)), ["small", "wide", "world"]);
  t.deepEqual(sorted(grid.search(1.9, 52.9)), ["wide", "world"]);
  grid.remove(wide, "wide");
  t.deepEqual(sorted(grid.search(1.9, 52.9)), ["world"]);
  t.deepEqual(sorted(grid.search(0.001, 51.001)), ["small", "world"]);
});

test("the edges of the map: ±180° longitude and the poles", (t) => {
  const grid = new BoxGrid<string>();
  grid.insert(box(179.99, -16.6, 180, -16.4), "east of the seam");
  grid.insert(box(-180, -16.6, -179.99, -16.4), "west of the seam");
  grid.insert(box(-1, 89.999, 1, 90), "pole");
  t.deepEqual(grid.search(180, -16.5), ["east of the seam"]);
  t.deepEqual(grid.search(-180, -16.5), ["west of the seam"]);
  t.deepEqual(grid.search(0, 90), ["pole"]);
  t.deepEqual(grid.search(0, 89.9), []);
});

test("removing one of several boxes in a cell keeps the others' bounds", (t) => {
  const grid = new BoxGrid<string>();
  const a = box(0.001, 0.001, 0.002, 0.002);
  const b = box(0.003, 0.003, 0.004, 0.004);
  const c = box(0.005, 0.005, 0.006, 0.006);
  grid.insert(a, "a");
  grid.insert(b, "b");
  grid.insert(c, "c");
  grid.remove(a, "a");
  t.deepEqual(grid.search(0.0015, 0.0015), []);
  t.deepEqual(grid.search(0.0035, 0.0035), ["b"]);
  t.deepEqual(grid.search(0.0055, 0.0055), ["c"], "the box moved into the gap keeps its own bounds");
  grid.remove(b, "b");
  grid.remove(c, "c");
  t.deepEqual(grid.search(0.0055, 0.0055), []);
});

test("many boxes of mixed sizes, inserted and half removed: the same answers as a scan of them all", (t) => {
  const random = seededRandom(11);
  const grid = new BoxGrid<number>();
  const live = new Map<number, GeoBox>();
  for (let i = 0; i < 3_000; i++) {
    // Mostly city-sized (up to about 1 km), some kilometres wide.
    const size = random() < 0.95 ? random() * 0.01 : random() * 0.5;
    const minX = -1 + random() * 2;
    const minY = 50 + random() * 2;
    const b = box(minX, minY, minX + size, minY + size * 0.7);
    grid.insert(b, i);
    live.set(i, b);
  }
  for (const [i, b] of [...live]) {
    if (i % 2) {
      grid.remove(b, i);
      live.delete(i);
    }
  }
  // Points inside the area and some on box corners.
  const points: [number, number][] = [];
  for (let i = 0; i < 5_000; i++) points.push([-1.1 + random() * 2.6, 49.9 + random() * 2.8]);
  for (const b of [...live.values()].slice(0, 500)) points.push([b.maxX, b.maxY], [b.minX, b.minY]);
  let compared = 0;
  for (const [lon, lat] of points) {
    const expected = [...live]
      .filter(([, b]) => holds(b, lon, lat))
      .map(([i]) => i)
      .sort((x, y) => x - y);
    const got = grid.search(lon, lat).sort((x, y) => x - y);
    if (JSON.stringify(got) !== JSON.stringify(expected))
      return t.fail(`at ${lon}, ${lat}: ${JSON.stringify(got)} instead of ${JSON.stringify(expected)}`);
    compared += expected.length;
  }
  t.true(compared > 1_000, `the points hit boxes (${compared} hits)`);
});
