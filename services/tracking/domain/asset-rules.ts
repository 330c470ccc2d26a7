// Pure rules for the Asset body: what a valid create/update looks like. No I/O here.
import type { FieldViolation } from "../../runtime/errors/field-violation.js";

export interface AssetFields {
  name: string | null;
  description: string | null;
  category: string | null;
  speedThresholdKmh: number | null;
}

export interface AssetInputLike {
  name?: string;
  description?: string;
  category?: string;
  speedThresholdKmh?: number;
}

const maxLength = { name: 200, description: 2000, category: 100 } as const;
/** Nothing on the ground moves faster; the same bound observations use for speedKmh. */
export const maxSpeedKmh = 5000;

/**
 * Checks an Asset body. Returns the fields to store, or the violations: `malformed` ones make a
 * 400 (wrong shape), `semantic` ones a 422 (well-formed but out of range).
 */
export function checkAssetInput(input: AssetInputLike): { fields: AssetFields; malformed: FieldViolation[]; semantic: FieldViolation[] } {
  const malformed: FieldViolation[] = [];
  const semantic: FieldViolation[] = [];
  for (const key of ["name", "description", "category"] as const) {
    const value = input[key];
    if (value !== undefined && value.length > maxLength[key]) {
      malformed.push({ field: key, description: `must be at most ${maxLength[key]} characters` });
    }
  }
  const speed = input.speedThresholdKmh;
  if (speed !== undefined) {
    if (!Number.isFinite(speed)) malformed.push({ field: "speedThresholdKmh", description: "must be a finite number" });
    else if (speed <= 0 || speed > maxSpeedKmh) {
      semantic.push({ field: "speedThresholdKmh", description: `must be greater than 0 and at most ${maxSpeedKmh} km/h` });
    }
  }
  return {
    fields: {
      name: input.name ?? null,
      description: input.description ?? null,
      category: input.category ?? null,
      speedThresholdKmh: speed ?? null,
    },
    malformed,
    semantic,
  };
}
