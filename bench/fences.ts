// `npm run bench:fences`: point queries against the geofence index with the ingest benchmark's
// 10,000 fences, the grid of BoxGrid against an R-tree (rbush) holding the same boxes, in one
// process over the same points. A benchmark, not a test.
import RBush from "rbush";
import { cpus } from "node:os";
import { circleBoxes, type GeoBox } from "../services/tracking/domain/geo.js";
import { BoxGrid } from "../services/tracking/ingest/box-grid.js";
import { seededRandom } from "../test/support/seeded-random.js";
import { region, scatterFences } from "./ingest-fleet.js";

const fenceCount = 10_000;
const pointCount = 200_000;
const rounds = 5;

interface Boxed extends GeoBox {
  id: number;
}

const grid = new BoxGrid<number>();
const tree = new RBush<Boxed>();
scatterFences(fenceCount).forEach((f, id) => {
  for (const box of circleBoxes(f.centerLatitude, f.centerLongitude, f.radiusMeters)) {
    grid.insert(box, id);
    tree.insert({ ...box, id });
  }
});

const random = seededRandom(3);
const lat = new Float64Array(pointCount);
const lon = new Float64Array(pointCount);
for (let i = 0; i < pointCount; i++) {
  lat[i] = region.minLat + random() * (region.maxLat - region.minLat);
  lon[i] = region.minLon + random() * (region.maxLon - region.minLon);
}

/** µs per query of the best round (the first rounds compile), and the hits, which must agree. */
function measure(query: (lon: number, lat: number) => number): { usPerQuery: number; hits: number } {
  let best = Number.POSITIVE_INFINITY;
  let hits = 0;
  for (let round = 0; round < rounds; round++) {
    hits = 0;
    const started = performance.now();
    for (let i = 0; i < pointCount; i++) hits += query(lon[i]!, lat[i]!);
    best = Math.min(best, ((performance.now() - started) * 1000) / pointCount);
  }
  return { usPerQuery: best, hits };
}

const baseline = measure((x, y) => tree.search({ minX: x, minY: y, maxX: x, maxY: y }).length);
const gridded = measure((x, y) => grid.search(x, y).length);
if (baseline.hits !== gridded.hits) throw new Error(`the grid found ${gridded.hits} boxes, the R-tree ${baseline.hits}`);

process.stdout.write(
  `${[
    `Meshwork fence index benchmark: ${cpus()[0]?.model.trim() ?? "unknown CPU"}, ${cpus().length} cores; Node ${process.version}`,
    `${fenceCount} fences of 50–300 m over ${(region.maxLat - region.minLat).toFixed(1)}° × ${(region.maxLon - region.minLon).toFixed(1)}°, ${pointCount} points, best of ${rounds} rounds; ${(gridded.hits / pointCount).toFixed(2)} candidates per point`,
    `  R-tree (rbush), baseline: ${baseline.usPerQuery.toFixed(3)} µs per point`,
    `  grid (BoxGrid):           ${gridded.usPerQuery.toFixed(3)} µs per point = ${(gridded.usPerQuery / baseline.usPerQuery).toFixed(2)}× the baseline`,
  ].join("\n")}\n`,
);
