// The simulator's scenarios as pure point generators: where each point is, how fast it moves, and
// when the run starts. No I/O; the SimulateObservations handler records the points.
import { seedGeofences } from "./seed-data.js";

/** Mean earth radius (IUGG), the same sphere haversine distances use. */
const earthRadiusMeters = 6_371_008.8;
const rad = Math.PI / 180;

/** Reference: points 30 s apart, the run starting 10 minutes before the call. */
export const pointIntervalSeconds = 30;
export const runStartsBeforeMs = 10 * 60 * 1000;
/** A small, fixed accuracy: the points are exact, and edge-aware exit rules must not blur them. */
const simulatedAccuracyMeters = 5;

export interface SimulatedPoint {
  /** Seconds after the run's start. */
  offsetSeconds: number;
  latitude: number;
  longitude: number;
  speedKmh: number;
  headingDegrees: number;
  accuracyMeters: number;
}

export interface SimulatedFence {
  name: string;
  description: string;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
}

export interface SimulationPreset {
  preset: number;
  name: "NormalRoute" | "SpeedViolation" | "GeofenceEntryExit";
  /** The device a run uses when the request names none. */
  defaultIdentifier: string;
  points: readonly SimulatedPoint[];
  /** A temporary fence the run creates first and deactivates afterwards. */
  fence?: SimulatedFence;
}

interface Position {
  latitude: number;
  longitude: number;
}

/** Moves a position on a local flat plane: exact enough (well under a metre) over a few km. */
function offset(from: Position, eastMeters: number, northMeters: number): Position {
  return {
    latitude: from.latitude + northMeters / earthRadiusMeters / rad,
    longitude: from.longitude + eastMeters / (earthRadiusMeters * Math.cos(from.latitude * rad)) / rad,
  };
}

/** East and north metres from `origin` to `to` on the same local plane. */
function metresBetween(origin: Position, to: Position): { east: number; north: number } {
  return {
    east: (to.longitude - origin.longitude) * rad * earthRadiusMeters * Math.cos(origin.latitude * rad),
    north: (to.latitude - origin.latitude) * rad * earthRadiusMeters,
  };
}

const round6 = (value: number) => Math.round(value * 1e6) / 1e6;

/** A drive along a fixed bearing where point i moves at speeds[i] until the next point. */
function drive(start: Position, bearingDegrees: number, speeds: readonly number[]): SimulatedPoint[] {
  const east = Math.sin(bearingDegrees * rad);
  const north = Math.cos(bearingDegrees * rad);
  const points: SimulatedPoint[] = [];
  let at = start;
  speeds.forEach((speedKmh, i) => {
    points.push({
      offsetSeconds: i * pointIntervalSeconds,
      latitude: round6(at.latitude),
      longitude: round6(at.longitude),
      speedKmh,
      headingDegrees: bearingDegrees,
      accuracyMeters: simulatedAccuracyMeters,
    });
    const metres = (speedKmh * 1000 * pointIntervalSeconds) / 3600;
    at = offset(at, east * metres, north * metres);
  });
  return points;
}

// 0 NormalRoute: east along the river from Canary Wharf, 45-80 km/h, far from the demo fences.
const normalRoute = drive({ latitude: 51.5054, longitude: -0.0235 }, 95, [48, 55, 62, 70, 76, 80, 72, 65, 58, 50]);

// 1 SpeedViolation: west on the A4/M4 from Chiswick, five points at 140-160 km/h in one episode,
// which the per-device cooldown turns into exactly one alert; stops well short of Heathrow's fence.
const speedViolation = drive({ latitude: 51.4925, longitude: -0.224 }, 265, [95, 118, 142, 150, 158, 160, 146, 105]);

// 2 GeofenceEntryExit: the reference's temporary fence. The track crosses its south-west side on a
// chord, so three points fall inside (one enter, one exit) while every point stays more than
// 1500 m + 100 m from the seeded City fence, whose centre lies about 816 m from this one: a demo
// that was seeded first still gets exactly the reference's two breaches.
const entryExitFence: SimulatedFence = {
  name: "Simulation: temporary fence",
  description: "Created by the GeofenceEntryExit simulation and deactivated when it ends.",
  centerLatitude: 51.51,
  centerLongitude: -0.1,
  radiusMeters: 1000,
};

function entryExitTrack(): SimulatedPoint[] {
  const centre = { latitude: entryExitFence.centerLatitude, longitude: entryExitFence.centerLongitude };
  const city = seedGeofences[0]!;
  const toCity = metresBetween(centre, { latitude: city.centerLatitude, longitude: city.centerLongitude });
  const length = Math.hypot(toCity.east, toCity.north);
  // Unit vector pointing away from the City fence, and the direction of travel across it.
  const away = { east: -toCity.east / length, north: -toCity.north / length };
  const along = { east: -away.north, north: away.east };
  const chordOffsetMeters = 800;
  const stepMeters = 400; // 48 km/h over 30 s
  const speedKmh = (stepMeters / pointIntervalSeconds) * 3.6;
  const headingDegrees = Math.round(((Math.atan2(along.east, along.north) / rad + 360) % 360) * 10) / 10;
  return Array.from({ length: 10 }, (_, i) => {
    const s = -1950 + i * stepMeters;
    const at = offset(centre, away.east * chordOffsetMeters + along.east * s, away.north * chordOffsetMeters + along.north * s);
    return {
      offsetSeconds: i * pointIntervalSeconds,
      latitude: round6(at.latitude),
      longitude: round6(at.longitude),
      speedKmh,
      headingDegrees,
      accuracyMeters: simulatedAccuracyMeters,
    };
  });
}

export const simulationPresets: readonly SimulationPreset[] = [
  { preset: 0, name: "NormalRoute", defaultIdentifier: "sim-normal-route", points: normalRoute },
  { preset: 1, name: "SpeedViolation", defaultIdentifier: "sim-speed-violation", points: speedViolation },
  {
    preset: 2,
    name: "GeofenceEntryExit",
    defaultIdentifier: "sim-geofence-entry-exit",
    points: entryExitTrack(),
    fence: entryExitFence,
  },
];

/** The preset by its number, or undefined outside 0..2. */
export function findPreset(preset: number): SimulationPreset | undefined {
  return simulationPresets.find((p) => p.preset === preset);
}

export interface RunTiming {
  /** observedAt of the first point. */
  start: Date;
  /**
   * False when the device already has observations newer than the reference window allows to
   * follow: the points are then older than those, so they are stored but move no geofence state.
   */
  inOrder: boolean;
}

/**
 * When a run starts. The reference starts 10 minutes ago; a device that already has newer
 * observations (typically an earlier run) gets its points just after its newest one instead, as
 * long as the whole run still ends by `now`, so a rerun neither collides on observedAt nor lands
 * out of order. Whole seconds keep the timestamps readable and stable.
 */
export function planRunTiming(now: Date, newestObservedAt: Date | null, pointCount: number): RunTiming {
  const nowMs = Math.floor(now.getTime() / 1000) * 1000;
  const reference = nowMs - runStartsBeforeMs;
  if (!newestObservedAt || newestObservedAt.getTime() < reference) return { start: new Date(reference), inOrder: true };
  const afterNewest = Math.floor(newestObservedAt.getTime() / 1000) * 1000 + 1000;
  const spanMs = Math.max(0, pointCount - 1) * pointIntervalSeconds * 1000;
  if (afterNewest + spanMs <= nowMs) return { start: new Date(afterNewest), inOrder: true };
  return { start: new Date(reference), inOrder: false };
}

/** Great-circle distance in metres; lets callers check a track against a fence. */
export function haversineMeters(a: Position, b: Position): number {
  const dLat = (b.latitude - a.latitude) * rad;
  const dLon = (b.longitude - a.longitude) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.latitude * rad) * Math.cos(b.latitude * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * earthRadiusMeters * Math.asin(Math.min(1, Math.sqrt(h)));
}
