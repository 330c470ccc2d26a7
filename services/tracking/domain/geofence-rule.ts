// Geofence rules: what a valid fence body is, and when a position is inside a fence. Entering
// needs the fix inside the circle; leaving needs the whole accuracy disc outside it
// (`distance - accuracy > radius`), so GPS noise at the edge does not flap Enter/Exit. Pure, no I/O.
import type { FieldViolation } from "../../runtime/errors/field-violation.js";
import { haversineMeters } from "./geo.js";

export type BreachEventType = "Enter" | "Exit";

/** The part of a fence the rules need. */
export interface FenceShape {
  id: string;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
}

export interface Fix {
  latitude: number;
  longitude: number;
  /** Radius of the fix's uncertainty in meters; null or absent counts as exact. */
  accuracyMeters: number | null;
}

export interface FenceTransition<F extends FenceShape = FenceShape> {
  fence: F;
  type: BreachEventType;
  distanceMeters: number;
}

/**
 * Whether a fix counts as inside, given what the device was before. Outside → inside on the
 * plain `distance <= radius`; inside stays inside until `distance - accuracy > radius`.
 */
export function isInside(fence: FenceShape, fix: Fix, wasInside: boolean): { inside: boolean; distanceMeters: number } {
  const distanceMeters = haversineMeters(fix.latitude, fix.longitude, fence.centerLatitude, fence.centerLongitude);
  const accuracy = Math.max(0, fix.accuracyMeters ?? 0);
  const inside = wasInside ? !(distanceMeters - accuracy > fence.radiusMeters) : distanceMeters <= fence.radiusMeters;
  return { inside, distanceMeters };
}

/**
 * The Enter/Exit transitions of one fix against the fences it may touch: the candidates from a
 * spatial query plus every fence the device was inside (which may no longer be near). A fence
 * with no earlier state counts as "outside": a first fix inside is an Enter, outside is nothing.
 */
export function evaluateFences<F extends FenceShape>(
  fix: Fix,
  fences: Iterable<F>,
  wasInside: (fenceId: string) => boolean,
): FenceTransition<F>[] {
  const transitions: FenceTransition<F>[] = [];
  const seen = new Set<string>();
  for (const fence of fences) {
    if (seen.has(fence.id)) continue;
    seen.add(fence.id);
    const before = wasInside(fence.id);
    const { inside, distanceMeters } = isInside(fence, fix, before);
    if (inside !== before) transitions.push({ fence, type: inside ? "Enter" : "Exit", distanceMeters });
  }
  return transitions;
}

export interface GeofenceFields {
  name: string | null;
  description: string | null;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
  isActive: boolean;
}

export interface GeofenceInputLike {
  name?: string;
  description?: string;
  centerLatitude?: number;
  centerLongitude?: number;
  radiusMeters?: number;
  isActive?: boolean;
}

const maxLength = { name: 200, description: 2000 } as const;

/**
 * Checks a Geofence body (create and update alike; isActive defaults to true). Field paths are
 * proto paths under `prefix`. `malformed` makes a 400, `semantic` a 422.
 */
export function checkGeofenceInput(
  input: GeofenceInputLike,
  prefix = "geofence.",
): { fields?: GeofenceFields; malformed: FieldViolation[]; semantic: FieldViolation[] } {
  const malformed: FieldViolation[] = [];
  const semantic: FieldViolation[] = [];
  for (const key of ["name", "description"] as const) {
    const value = input[key];
    if (value !== undefined && value.length > maxLength[key]) {
      malformed.push({ field: `${prefix}${key}`, description: `must be at most ${maxLength[key]} characters` });
    }
  }
  const finite = (value: number | undefined, field: string): number | undefined => {
    if (value === undefined) malformed.push({ field, description: "is required" });
    else if (!Number.isFinite(value)) malformed.push({ field, description: "must be a finite number" });
    else return value;
    return undefined;
  };
  const lat = finite(input.centerLatitude, `${prefix}center_latitude`);
  const lon = finite(input.centerLongitude, `${prefix}center_longitude`);
  const radius = finite(input.radiusMeters, `${prefix}radius_meters`);
  if (lat !== undefined && (lat < -90 || lat > 90)) {
    semantic.push({ field: `${prefix}center_latitude`, description: "must be between -90 and 90" });
  }
  if (lon !== undefined && (lon < -180 || lon > 180)) {
    semantic.push({ field: `${prefix}center_longitude`, description: "must be between -180 and 180" });
  }
  if (radius !== undefined && radius <= 0) {
    semantic.push({ field: `${prefix}radius_meters`, description: "must be greater than 0" });
  }
  if (malformed.length || semantic.length || lat === undefined || lon === undefined || radius === undefined) {
    return { malformed, semantic };
  }
  return {
    fields: {
      name: input.name ?? null,
      description: input.description ?? null,
      centerLatitude: lat,
      centerLongitude: lon,
      radiusMeters: radius,
      isActive: input.isActive ?? true,
    },
    malformed,
    semantic,
  };
}
