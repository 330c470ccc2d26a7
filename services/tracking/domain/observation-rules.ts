// Pure rules for an incoming observation: what a well-formed, plausible position report is and
// how it names its device. Nothing here reads the database or the clock (the caller passes now).
import { isUuid, type FieldViolation } from "../../runtime/errors/field-violation.js";
import { maxSpeedKmh } from "./asset-rules.js";
import { isNullIsland } from "./geo.js";
import type { CheckedObservation, DeviceReference, ObservationInputLike } from "./observation-types.js";

/** A device clock may run a little ahead; further than this is a bad fix, not a fast clock. */
export const maxFutureSkewMs = 5 * 60 * 1000;

export interface ObservationCheck {
  /** Set when there are no violations. */
  value?: CheckedObservation;
  /** Wrong shape (missing, not finite, bad uuid): 400. */
  malformed: FieldViolation[];
  /** Well-formed but impossible (out of range, null island, future): 422. */
  semantic: FieldViolation[];
}

export interface CheckOptions {
  now: Date;
  /** Ingest, integration and bulk paths may name the device by identifier when deviceId is absent. */
  resolveIdentifier: boolean;
  /** Proto path of the observation inside the request: "observation." for create and ingest, "" for bulk items. */
  prefix: string;
}

/**
 * Checks one observation against the documented rules: latitude in [-90, 90], longitude in
 * [-180, 180], not within 10 km of 0,0, speedKmh in [0, 5000], observedAt at most 5 minutes ahead
 * of now, and a device reference. We also refuse a negative accuracyMeters (it would make the
 * accuracy-aware geofence exit fire early) and a heading outside [0, 360].
 */
export function checkObservation(input: ObservationInputLike, options: CheckOptions): ObservationCheck {
  const p = options.prefix;
  const malformed: FieldViolation[] = [];
  const semantic: FieldViolation[] = [];

  const device = deviceReference(input, options.resolveIdentifier, p, malformed);

  let observedAt: Date | undefined;
  if (!input.observedAt) malformed.push({ field: `${p}observed_at`, description: "is required" });
  else {
    const ms = Number(input.observedAt.seconds) * 1000 + Math.floor(input.observedAt.nanos / 1_000_000);
    if (!Number.isFinite(ms)) malformed.push({ field: `${p}observed_at`, description: "is not a valid time" });
    else if (ms > options.now.getTime() + maxFutureSkewMs) {
      semantic.push({ field: `${p}observed_at`, description: "must not be more than 5 minutes in the future" });
    } else observedAt = new Date(ms);
  }

  const latitude = number(input.latitude, `${p}latitude`, true, malformed);
  const longitude = number(input.longitude, `${p}longitude`, true, malformed);
  if (latitude !== null && (latitude < -90 || latitude > 90)) {
    semantic.push({ field: `${p}latitude`, description: "must be between -90 and 90" });
  }
  if (longitude !== null && (longitude < -180 || longitude > 180)) {
    semantic.push({ field: `${p}longitude`, description: "must be between -180 and 180" });
  }
  if (latitude !== null && longitude !== null && semantic.length === 0 && isNullIsland(latitude, longitude)) {
    const description = "position is within 10 km of 0,0 (null island), which is taken as a missing fix";
    semantic.push({ field: `${p}latitude`, description }, { field: `${p}longitude`, description });
  }

  const altitude = number(input.altitude, `${p}altitude`, false, malformed);
  const accuracyMeters = number(input.accuracyMeters, `${p}accuracy_meters`, false, malformed);
  if (accuracyMeters !== null && accuracyMeters < 0) {
    semantic.push({ field: `${p}accuracy_meters`, description: "must be 0 or more" });
  }
  const speedKmh = number(input.speedKmh, `${p}speed_kmh`, false, malformed);
  if (speedKmh !== null && (speedKmh < 0 || speedKmh > maxSpeedKmh)) {
    semantic.push({ field: `${p}speed_kmh`, description: `must be between 0 and ${maxSpeedKmh}` });
  }
  const headingDegrees = number(input.headingDegrees, `${p}heading_degrees`, false, malformed);
  if (headingDegrees !== null && (headingDegrees < 0 || headingDegrees > 360)) {
    semantic.push({ field: `${p}heading_degrees`, description: "must be between 0 and 360" });
  }

  if (malformed.length || semantic.length || !device || !observedAt || latitude === null || longitude === null) {
    return { malformed, semantic };
  }
  return {
    value: {
      device,
      observedAt,
      latitude,
      longitude,
      altitude,
      accuracyMeters,
      speedKmh,
      headingDegrees,
      metadata: input.metadata ?? null,
    },
    malformed,
    semantic,
  };
}

/**
 * deviceId when given (it must be a uuid); otherwise, where allowed, deviceIdentifier. An empty
 * string counts as absent, as JSON clients often send "" for "not set".
 */
export function deviceReference(
  input: Pick<ObservationInputLike, "deviceId" | "deviceIdentifier">,
  resolveIdentifier: boolean,
  prefix: string,
  violations: FieldViolation[],
): DeviceReference | undefined {
  const id = input.deviceId?.trim();
  if (id) {
    if (isUuid(id)) return { kind: "id", id: id.toLowerCase() };
    violations.push({ field: `${prefix}device_id`, description: "is not a valid uuid" });
    return undefined;
  }
  // Identifiers are matched exactly as stored; only an all-blank one counts as absent.
  const identifier = input.deviceIdentifier;
  if (resolveIdentifier && identifier?.trim()) return { kind: "identifier", identifier };
  violations.push({
    field: `${prefix}device_id`,
    description: resolveIdentifier ? "is required when deviceIdentifier is not given" : "is required",
  });
  return undefined;
}

function number(value: number | undefined, field: string, required: boolean, violations: FieldViolation[]): number | null {
  if (value === undefined) {
    if (required) violations.push({ field, description: "is required" });
    return null;
  }
  if (!Number.isFinite(value)) {
    violations.push({ field, description: "must be a finite number" });
    return null;
  }
  return value;
}
