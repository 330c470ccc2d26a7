// The moving fleet of the ingest benchmark: devices that drive around one region with a clock of
// their own (one fix per device per simulated second, so every observedAt of a device is distinct
// and in order), and the geofences scattered over the same region. Deterministic from a seed, so
// two runs send the same tracks.
import { seededRandom } from "../test/support/seeded-random.js";

/** Greater London and around it: about 44 km north–south by 55 km east–west. */
export const region = { minLat: 51.3, maxLat: 51.7, minLon: -0.5, maxLon: 0.3 } as const;

/** Fences of 50–300 m: together they cover about half the region, as dense city fencing does. */
const fenceRadius = { min: 50, max: 300 } as const;

const metersPerDegreeLat = 111_320;

export interface Fix {
  deviceId: string;
  deviceIdentifier: string;
  /** Milliseconds since the epoch. */
  observedAtMs: number;
  latitude: number;
  longitude: number;
  speedKmh: number;
  headingDegrees: number;
  accuracyMeters: number;
}

export interface FleetDevice {
  id: string;
  identifier: string;
}

interface Vehicle {
  id: string;
  identifier: string;
  lat: number;
  lon: number;
  heading: number;
  speed: number;
  /** Next observedAt. */
  clock: number;
}

/**
 * Devices moving at city speeds with an occasional burst over 120 km/h (so the speed rule and its
 * cooldown run too). `next(i)` advances device i by one simulated second.
 */
export class Fleet {
  private readonly vehicles: Vehicle[];
  private readonly random: () => number;

  /** `startMs`: the first observedAt; each fix of a device is one second after its previous one. */
  constructor(devices: readonly FleetDevice[], startMs: number, seed = 42) {
    this.random = seededRandom(seed);
    this.vehicles = devices.map(({ id, identifier }) => ({
      id,
      identifier,
      lat: region.minLat + this.random() * (region.maxLat - region.minLat),
      lon: region.minLon + this.random() * (region.maxLon - region.minLon),
      heading: this.random() * 360,
      speed: 20 + this.random() * 60,
      clock: startMs,
    }));
  }

  get size(): number {
    return this.vehicles.length;
  }

  /** The latest observedAt any device will send next: it must stay within 5 minutes of now. */
  get newestClockMs(): number {
    let newest = 0;
    for (const v of this.vehicles) newest = Math.max(newest, v.clock);
    return newest;
  }

  next(index: number): Fix {
    const v = this.vehicles[index]!;
    const r = this.random;
    v.heading = (v.heading + (r() - 0.5) * 40 + 360) % 360;
    // About one fix in 200 is a burst over the default 120 km/h threshold.
    v.speed = r() < 0.005 ? 125 + r() * 40 : Math.min(110, Math.max(5, v.speed + (r() - 0.5) * 10));
    const step = v.speed / 3.6; // meters in one second
    const rad = (v.heading * Math.PI) / 180;
    v.lat += (step * Math.cos(rad)) / metersPerDegreeLat;
    v.lon += (step * Math.sin(rad)) / (metersPerDegreeLat * Math.cos((v.lat * Math.PI) / 180));
    // Turn back at the edge of the region.
    if (v.lat < region.minLat || v.lat > region.maxLat) {
      v.lat = Math.min(region.maxLat, Math.max(region.minLat, v.lat));
      v.heading = (180 - v.heading + 360) % 360;
    }
    if (v.lon < region.minLon || v.lon > region.maxLon) {
      v.lon = Math.min(region.maxLon, Math.max(region.minLon, v.lon));
      v.heading = (360 - v.heading) % 360;
    }
    const fix: Fix = {
      deviceId: v.id,
      deviceIdentifier: v.identifier,
      observedAtMs: v.clock,
      latitude: round(v.lat, 6),
      longitude: round(v.lon, 6),
      speedKmh: round(v.speed, 1),
      headingDegrees: round(v.heading, 1),
      accuracyMeters: round(3 + r() * 12, 1),
    };
    v.clock += 1_000;
    return fix;
  }
}

export interface FenceSpec {
  name: string;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
}

/** `count` active fences spread uniformly over the region. */
export function scatterFences(count: number, seed = 7): FenceSpec[] {
  const r = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({
    name: `bench fence ${i + 1}`,
    centerLatitude: round(region.minLat + r() * (region.maxLat - region.minLat), 6),
    centerLongitude: round(region.minLon + r() * (region.maxLon - region.minLon), 6),
    radiusMeters: Math.round(fenceRadius.min + r() * (fenceRadius.max - fenceRadius.min)),
  }));
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
