// Pure rules for the Device body of create and update: what may be stored, and which problems
// are malformed input (400). Whether referenced rows exist is the handler's question (404).
import { isUuid, truncate, type FieldViolation } from "../../runtime/errors/field-violation.js";

export interface DeviceFields {
  identifier: string | null;
  label: string | null;
  protocol: string | null;
  assetId: string | null;
  provider: string | null;
  externalId: string | null;
  tags: string | null;
  integrationFeedId: string | null;
}

export interface DeviceInputLike {
  identifier?: string;
  label?: string;
  protocol?: string;
  assetId?: string;
  provider?: string;
  externalId?: string;
  tags?: string;
  integrationFeedId?: string;
}

type TextKey = "identifier" | "label" | "protocol" | "provider" | "externalId" | "tags";

// Bounds keep one row from carrying a document; tags are free text, so they get the most room.
const maxLength: Record<TextKey, number> = {
  identifier: 200,
  label: 200,
  protocol: 100,
  provider: 100,
  externalId: 200,
  tags: 2000,
};

/** Proto field names, so violations read as paths of the request (`device.asset_id`). */
const protoName: Record<keyof DeviceFields, string> = {
  identifier: "identifier",
  label: "label",
  protocol: "protocol",
  assetId: "asset_id",
  provider: "provider",
  externalId: "external_id",
  tags: "tags",
  integrationFeedId: "integration_feed_id",
};

/** The request path of a Device body field, e.g. `device.asset_id`. */
export function deviceFieldPath(key: keyof DeviceFields): string {
  return `device.${protoName[key]}`;
}

/**
 * Checks a Device body. Returns the fields to store (absent → null, ids lower-cased) or the
 * malformed ones. A blank identifier is refused rather than stored: ingest resolves devices by
 * identifier, and an empty one can only be a client mistake.
 */
export function checkDeviceInput(input: DeviceInputLike): { fields: DeviceFields; malformed: FieldViolation[] } {
  const malformed: FieldViolation[] = [];
  for (const key of Object.keys(maxLength) as TextKey[]) {
    const value = input[key];
    if (value !== undefined && value.length > maxLength[key]) {
      malformed.push({ field: deviceFieldPath(key), description: `must be at most ${maxLength[key]} characters` });
    }
  }
  if (input.identifier !== undefined && input.identifier.trim() === "") {
    malformed.push({ field: deviceFieldPath("identifier"), description: "must not be blank" });
  }
  for (const key of ["assetId", "integrationFeedId"] as const) {
    const value = input[key];
    if (value !== undefined && !isUuid(value)) {
      malformed.push({ field: deviceFieldPath(key), description: `'${truncate(value)}' is not a valid uuid` });
    }
  }
  return {
    fields: {
      identifier: input.identifier ?? null,
      label: input.label ?? null,
      protocol: input.protocol ?? null,
      assetId: input.assetId?.toLowerCase() ?? null,
      provider: input.provider ?? null,
      externalId: input.externalId ?? null,
      tags: input.tags ?? null,
      integrationFeedId: input.integrationFeedId?.toLowerCase() ?? null,
    },
    malformed,
  };
}
