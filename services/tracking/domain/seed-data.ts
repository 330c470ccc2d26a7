// The demo records POST /api/system/seed writes: three assets, three devices linked to them and
// two London geofences. Pure data and a planner, no I/O; the handler gives them ids and stores them.

export interface SeedAsset {
  /** Local name a seed device uses to point at its asset; never stored. */
  key: string;
  name: string;
  description: string;
  category: string;
  speedThresholdKmh: number | null;
}

export interface SeedDevice {
  identifier: string;
  label: string;
  protocol: string;
  /** `key` of the asset this device tracks. */
  assetKey: string;
  tags: string;
}

export interface SeedGeofence {
  name: string;
  description: string;
  centerLatitude: number;
  centerLongitude: number;
  radiusMeters: number;
}

export const seedAssets: readonly SeedAsset[] = [
  {
    key: "van-alpha",
    name: "Delivery Van Alpha",
    description: "Demo delivery van working central London.",
    category: "vehicle",
    speedThresholdKmh: 90,
  },
  {
    key: "van-bravo",
    name: "Delivery Van Bravo",
    description: "Demo delivery van on the Heathrow run.",
    category: "vehicle",
    speedThresholdKmh: 110,
  },
  {
    key: "depot",
    name: "Central Depot",
    description: "Demo depot; its gateway reports a fixed position.",
    category: "facility",
    // A depot does not move: the service default threshold applies.
    speedThresholdKmh: null,
  },
];

export const seedDevices: readonly SeedDevice[] = [
  { identifier: "demo-van-alpha", label: "Van Alpha tracker", protocol: "gps-http", assetKey: "van-alpha", tags: "demo,van" },
  { identifier: "demo-van-bravo", label: "Van Bravo tracker", protocol: "gps-http", assetKey: "van-bravo", tags: "demo,van" },
  { identifier: "demo-depot-gateway", label: "Depot gateway", protocol: "mqtt", assetKey: "depot", tags: "demo,depot" },
];

export const seedGeofences: readonly SeedGeofence[] = [
  {
    name: "London City Centre",
    description: "Demo fence around the City of London.",
    centerLatitude: 51.5155,
    centerLongitude: -0.0922,
    radiusMeters: 1500,
  },
  {
    name: "Heathrow Airport",
    description: "Demo fence around London Heathrow.",
    centerLatitude: 51.47,
    centerLongitude: -0.4543,
    radiusMeters: 2000,
  },
];

/** What a seed call finds before it decides. */
export interface SeedState {
  /** Rows marked as seeded, of any kind. */
  seededRows: number;
  reset: boolean;
}

export interface SeedPlan {
  /** Remove the seeded rows first. */
  wipe: boolean;
  /** Write the demo records. */
  create: boolean;
  alreadySeeded: boolean;
  resetPerformed: boolean;
}

/**
 * Seeding is idempotent: with seeded rows present and no reset nothing happens; a reset always
 * wipes what was seeded (possibly nothing) and writes the demo records again.
 */
export function planSeed(state: SeedState): SeedPlan {
  if (state.reset) return { wipe: true, create: true, alreadySeeded: false, resetPerformed: true };
  if (state.seededRows > 0) return { wipe: false, create: false, alreadySeeded: true, resetPerformed: false };
  return { wipe: false, create: true, alreadySeeded: false, resetPerformed: false };
}
