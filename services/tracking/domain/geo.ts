// Spherical geometry for observations and geofences: great-circle distance and the lat/lon
// boxes that enclose a circle, which the spatial index stores. Pure functions, no I/O.

/** Mean Earth radius in meters, the value the haversine formula is usually given with. */
export const earthRadiusMeters = 6_371_000;

/** Observations this close to 0,0 are treated as a GPS fix that never happened ("null island"). */
export const nullIslandRadiusMeters = 10_000;

const rad = Math.PI / 180;
const deg = 180 / Math.PI;

/** Great-circle distance between two positions in meters (haversine: stable for small distances). */
export function haversineMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * rad;
  const dLon = (lon2 - lon1) * rad;
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(dLon / 2) ** 2;
  // Rounding can push s a hair above 1 for antipodal points; asin would then answer NaN.
  return 2 * earthRadiusMeters * Math.asin(Math.min(1, Math.sqrt(s)));
}

export function isNullIsland(latitude: number, longitude: number): boolean {
  return haversineMeters(latitude, longitude, 0, 0) <= nullIslandRadiusMeters;
}

/** A lat/lon rectangle in degrees, in the shape rbush indexes (x is longitude, y latitude). */
export interface GeoBox {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

// Widens each box by about a centimetre, so floating-point error in the box never drops a
// point that the exact distance check would have counted as inside.
const slackDegrees = 1e-7;

/**
 * The boxes that together enclose every point within `radiusMeters` of the centre. Usually one;
 * two when the circle crosses the antimeridian (one box each side of ±180°); a full band of
 * longitudes when it covers a pole. Uses the exact longitude half-width of a spherical cap,
 * asin(sin δ / cos φ), rather than δ / cos φ, which is too narrow for large circles.
 */
export function circleBoxes(latitude: number, longitude: number, radiusMeters: number): GeoBox[] {
  const delta = radiusMeters / earthRadiusMeters;
  if (delta >= Math.PI) return [{ minX: -180, minY: -90, maxX: 180, maxY: 90 }];
  const minLat = latitude - delta * deg - slackDegrees;
  const maxLat = latitude + delta * deg + slackDegrees;
  if (minLat <= -90 || maxLat >= 90) {
    // The cap contains a pole: every longitude reaches it.
    return [{ minX: -180, minY: Math.max(-90, minLat), maxX: 180, maxY: Math.min(90, maxLat) }];
  }
  const halfWidth = Math.asin(Math.min(1, Math.sin(delta) / Math.cos(latitude * rad))) * deg + slackDegrees;
  const minLon = longitude - halfWidth;
  const maxLon = longitude + halfWidth;
  if (halfWidth >= 180) return [{ minX: -180, minY: minLat, maxX: 180, maxY: maxLat }];
  if (minLon < -180) {
    return [
      { minX: minLon + 360, minY: minLat, maxX: 180, maxY: maxLat },
      { minX: -180, minY: minLat, maxX: maxLon, maxY: maxLat },
    ];
  }
  if (maxLon > 180) {
    return [
      { minX: minLon, minY: minLat, maxX: 180, maxY: maxLat },
      { minX: -180, minY: minLat, maxX: maxLon - 360, maxY: maxLat },
    ];
  }
  return [{ minX: minLon, minY: minLat, maxX: maxLon, maxY: maxLat }];
}
