// Point queries over lat/lon boxes, for the fence index. Boxes of city size (the usual fence) go
// into a uniform grid of 0.01° cells (about 1.1 km by 0.7 km at 50° north), so a point looks only
// at the boxes of its own cell. Each cell keeps its boxes' bounds in one Float64Array, so the test
// reads neighbouring numbers instead of chasing an object per box: with 10,000 fences a query
// costs a fraction of an R-tree search. A box that would cover more than `maxCellsPerBox` cells
// (a fence kilometres wide) goes into an R-tree instead, which queries ask only when it holds any.
import RBush from "rbush";
import type { GeoBox } from "../domain/geo.js";

/** Cell edge in degrees. */
const cellDegrees = 0.01;
/** Cells per row: longitudes -180..180 give column indexes 0..36,000. */
const columns = Math.round(360 / cellDegrees) + 1;
const maxCellsPerBox = 64;

interface Cell<T> {
  /** minX, minY, maxX, maxY of box i at 4i..4i+3. */
  bounds: Float64Array;
  items: T[];
}

interface LargeBox<T> extends GeoBox {
  item: T;
}

/** Items by box; an item may be inserted under several boxes and is removed with the same box. */
export class BoxGrid<T> {
  private readonly cells = new Map<number, Cell<T>>();
  private readonly large = new RBush<LargeBox<T>>();
  private readonly largeBoxes: LargeBox<T>[] = [];

  insert(box: GeoBox, item: T): void {
    const span = cellSpan(box);
    if (span.count > maxCellsPerBox) {
      const entry = { minX: box.minX, minY: box.minY, maxX: box.maxX, maxY: box.maxY, item };
      this.large.insert(entry);
      this.largeBoxes.push(entry);
      return;
    }
    for (let row = span.firstRow; row <= span.lastRow; row++) {
      for (let column = span.firstColumn; column <= span.lastColumn; column++) {
        const key = row * columns + column;
        let cell = this.cells.get(key);
        if (!cell) this.cells.set(key, (cell = { bounds: new Float64Array(16), items: [] }));
        const at = cell.items.length;
        if ((at + 1) * 4 > cell.bounds.length) {
          const grown = new Float64Array(cell.bounds.length * 2);
          grown.set(cell.bounds);
          cell.bounds = grown;
        }
        cell.bounds[at * 4] = box.minX;
        cell.bounds[at * 4 + 1] = box.minY;
        cell.bounds[at * 4 + 2] = box.maxX;
        cell.bounds[at * 4 + 3] = box.maxY;
        cell.items.push(item);
      }
    }
  }

  /** Takes out the item as inserted under this box. */
  remove(box: GeoBox, item: T): void {
    const span = cellSpan(box);
    if (span.count > maxCellsPerBox) {
      const at = this.largeBoxes.findIndex((e) => e.item === item && sameBox(e, box));
      if (at >= 0) this.large.remove(this.largeBoxes.splice(at, 1)[0]!);
      return;
    }
    for (let row = span.firstRow; row <= span.lastRow; row++) {
      for (let column = span.firstColumn; column <= span.lastColumn; column++) {
        const key = row * columns + column;
        const cell = this.cells.get(key);
        if (!cell) continue;
        const at = cell.items.indexOf(item);
        if (at < 0) continue;
        // Swap the last box into the gap: order within a cell means nothing.
        const last = cell.items.length - 1;
        cell.items[at] = cell.items[last]!;
        cell.bounds.copyWithin(at * 4, last * 4, last * 4 + 4);
        cell.items.pop();
        if (!cell.items.length) this.cells.delete(key);
      }
    }
  }

  /** The items whose box holds the point (edges included), once per box. */
  search(longitude: number, latitude: number): T[] {
    const found: T[] = [];
    const cell = this.cells.get(rowOf(latitude) * columns + columnOf(longitude));
    if (cell) {
      const { bounds, items } = cell;
      for (let i = 0, j = 0; i < items.length; i++, j += 4) {
        if (bounds[j]! <= longitude && longitude <= bounds[j + 2]! && bounds[j + 1]! <= latitude && latitude <= bounds[j + 3]!)
          found.push(items[i]!);
      }
    }
    if (this.largeBoxes.length) {
      for (const entry of this.large.search({ minX: longitude, minY: latitude, maxX: longitude, maxY: latitude })) found.push(entry.item);
    }
    return found;
  }
}

function sameBox(a: GeoBox, b: GeoBox): boolean {
  return a.minX === b.minX && a.minY === b.minY && a.maxX === b.maxX && a.maxY === b.maxY;
}

// Clamped, so a coordinate at ±180 or ±90 lands in the last cell rather than outside the grid.
// Floor of a monotonic expression: a point inside a box always falls in a cell the box covers.
function columnOf(longitude: number): number {
  return Math.floor((Math.min(180, Math.max(-180, longitude)) + 180) / cellDegrees);
}

function rowOf(latitude: number): number {
  return Math.floor((Math.min(90, Math.max(-90, latitude)) + 90) / cellDegrees);
}

function cellSpan(box: GeoBox) {
  const firstColumn = columnOf(box.minX);
  const lastColumn = columnOf(box.maxX);
  const firstRow = rowOf(box.minY);
  const lastRow = rowOf(box.maxY);
  return { firstColumn, lastColumn, firstRow, lastRow, count: (lastColumn - firstColumn + 1) * (lastRow - firstRow + 1) };
}
