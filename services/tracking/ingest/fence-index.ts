// The in-memory spatial index over active geofences: each fence is stored by the lat/lon box(es)
// around its circle, so a position finds its candidate fences without scanning them all. The
// database stays the truth; this is a cache kept current by local changes, bus events from other
// instances and a periodic reload, each guarded by the fence's updatedAt so a late event never
// brings back an older state.
import { circleBoxes, type GeoBox } from "../domain/geo.js";
import type { FenceShape } from "../domain/geofence-rule.js";
import { BoxGrid } from "./box-grid.js";

/** What the index keeps of a fence: its shape plus what breach messages show. */
export interface IndexedFence extends FenceShape {
  name: string | null;
}

/** A fence as stored or as carried by a geofence event. */
export interface FenceState extends IndexedFence {
  isActive: boolean;
  updatedAt: Date;
}

interface Entry {
  fence: IndexedFence;
  boxes: GeoBox[];
}

export class FenceIndex {
  private readonly grid = new BoxGrid<IndexedFence>();
  private readonly entries = new Map<string, Entry>();
  /** updatedAt (ms) of the newest state seen per fence, active or not. */
  private readonly versions = new Map<string, number>();
  /** Deleted ids: a uuid never comes back, so any later event about one is stale. */
  private readonly deleted = new Set<string>();

  get size(): number {
    return this.entries.size;
  }

  /** Takes a fence's state if it is not older than what the index has; answers whether it did. */
  apply(state: FenceState): boolean {
    if (this.deleted.has(state.id)) return false;
    const version = state.updatedAt.getTime();
    const known = this.versions.get(state.id);
    if (known !== undefined && version < known) return false;
    this.versions.set(state.id, version);
    this.drop(state.id);
    if (state.isActive) this.insert(state);
    return true;
  }

  remove(id: string): void {
    this.deleted.add(id);
    this.versions.delete(id);
    this.drop(id);
  }

  /**
   * Makes the index match a snapshot of the active fences read at `readAt`. A fence missing from
   * the snapshot was deactivated or deleted, unless a newer state arrived while it was being read.
   */
  reconcile(active: FenceState[], readAt: Date): void {
    const present = new Set<string>();
    for (const state of active) {
      present.add(state.id);
      this.apply(state);
    }
    for (const id of [...this.entries.keys()]) {
      if (present.has(id)) continue;
      const known = this.versions.get(id) ?? 0;
      if (known <= readAt.getTime()) {
        this.versions.set(id, readAt.getTime());
        this.drop(id);
      }
    }
  }

  get(id: string): IndexedFence | undefined {
    return this.entries.get(id)?.fence;
  }

  /** Active fences whose box holds the point: a superset of the fences that contain it. */
  candidates(latitude: number, longitude: number): IndexedFence[] {
    const hits = this.grid.search(longitude, latitude);
    // A fence across the antimeridian has two boxes; a point on the seam could hit both.
    return hits.length <= 1 ? hits : [...new Set(hits)];
  }

  private insert(state: FenceState): void {
    const fence: IndexedFence = {
      id: state.id,
      name: state.name,
      centerLatitude: state.centerLatitude,
      centerLongitude: state.centerLongitude,
      radiusMeters: state.radiusMeters,
    };
    const boxes = circleBoxes(fence.centerLatitude, fence.centerLongitude, fence.radiusMeters);
    this.entries.set(fence.id, { fence, boxes });
    for (const box of boxes) this.grid.insert(box, fence);
  }

  private drop(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    for (const box of entry.boxes) this.grid.remove(box, entry.fence);
    this.entries.delete(id);
  }
}
