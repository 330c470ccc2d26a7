// Pure rules for the integration feed bodies (create, update) and for the feed-only fields of a
// feed observation: what may be stored, and which problems are malformed input (400). Whether
// referenced rows exist, and what is stored already, is the handler's question.
import { isUuid, truncate, type FieldViolation } from "../../runtime/errors/field-violation.js";
import { findProvider, providerIds } from "./integration-providers.js";
import { keepStoredSecrets, maskedValue, nestsDeeperThan, type JsonValue } from "./integration-secrets.js";
import { mergeTags } from "./integration-tags.js";

export const maxNameLength = 200;
export const maxTagsLength = 2000;
export const maxConfigurationLength = 65_536;
export const maxConfigurationDepth = 32;
/** Leaves room for the longest provider id and ":" within a device identifier's 200 characters. */
export const maxExternalTrackerIdLength = 180;
export const maxLabelLength = 200;

export interface FeedInputLike {
  name?: string;
  provider?: string;
  isEnabled?: boolean;
  autoCreateDevices?: boolean;
  defaultTags?: string;
  configurationJson?: string;
}

export interface FeedFields {
  name: string | null;
  isEnabled: boolean;
  autoCreateDevices: boolean;
  defaultTags: string | null;
  /** The parsed configuration; null when the body has none. */
  configuration: JsonValue | null;
}

export interface FeedCheck {
  fields: FeedFields;
  /** The provider id (create only); null when missing or unknown, with a violation. */
  provider: string | null;
  malformed: FieldViolation[];
}

/** Proto path of a feed body field, e.g. `feed.configuration_json`. */
export const feedField = (name: string): string => `feed.${name}`;

const allowedProviders = () => providerIds.join(", ");

/**
 * Checks a create body (`withProvider`) or an update body. The provider is matched ignoring case
 * and surrounding spaces; the configuration must be JSON text within the size and depth bounds.
 * Never echoes the configuration: it may hold secrets.
 */
export function checkFeedInput(input: FeedInputLike, options: { withProvider: boolean }): FeedCheck {
  const malformed: FieldViolation[] = [];

  if (input.name !== undefined && input.name.length > maxNameLength) {
    malformed.push({ field: feedField("name"), description: `must be at most ${maxNameLength} characters` });
  }
  if (input.defaultTags !== undefined && input.defaultTags.length > maxTagsLength) {
    malformed.push({ field: feedField("default_tags"), description: `must be at most ${maxTagsLength} characters` });
  }
  // The contract marks both REQUIRED and the interceptor refuses their absence; this covers callers
  // that reach the rules some other way.
  for (const [key, name] of [
    ["isEnabled", "is_enabled"],
    ["autoCreateDevices", "auto_create_devices"],
  ] as const) {
    if (input[key] === undefined) malformed.push({ field: feedField(name), description: "is required" });
  }

  let provider: string | null = null;
  if (options.withProvider) {
    const wanted = input.provider?.trim().toLowerCase();
    if (!wanted) {
      malformed.push({ field: feedField("provider"), description: `is required: one of ${allowedProviders()}` });
    } else if (!findProvider(wanted)) {
      malformed.push({
        field: feedField("provider"),
        description: `'${truncate(input.provider!)}' is not a provider; allowed: ${allowedProviders()}`,
      });
    } else provider = wanted;
  }

  const configuration = parseConfiguration(input.configurationJson, malformed);

  return {
    fields: {
      name: input.name ?? null,
      isEnabled: input.isEnabled ?? false,
      autoCreateDevices: input.autoCreateDevices ?? false,
      defaultTags: input.defaultTags ?? null,
      configuration,
    },
    provider,
    malformed,
  };
}

function parseConfiguration(text: string | undefined, malformed: FieldViolation[]): JsonValue | null {
  if (text === undefined) return null;
  const field = feedField("configuration_json");
  if (text.length > maxConfigurationLength) {
    malformed.push({ field, description: `must be at most ${maxConfigurationLength} characters` });
    return null;
  }
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    // The parser's message quotes the text, which may hold a secret: say only that it is not JSON.
    malformed.push({ field, description: "must be valid JSON text" });
    return null;
  }
  if (nestsDeeperThan(parsed, maxConfigurationDepth)) {
    malformed.push({ field, description: `must not nest objects and arrays deeper than ${maxConfigurationDepth} levels` });
    return null;
  }
  return parsed;
}

/**
 * The configuration text to store: the body's configuration with every mask under a secret key
 * replaced by the stored secret at the same path (`storedText` null on create). A mask with nothing
 * stored behind it is refused rather than stored as a password of three asterisks.
 */
export function configurationToStore(
  configuration: JsonValue | null,
  storedText: string | null,
): { text: string | null; malformed: FieldViolation[] } {
  if (configuration === null) return { text: null, malformed: [] };
  let stored: JsonValue | undefined;
  if (storedText !== null) {
    try {
      stored = JSON.parse(storedText) as JsonValue;
    } catch {
      stored = undefined;
    }
  }
  const { value, unmatched } = keepStoredSecrets(configuration, stored);
  if (unmatched.length) {
    const where = truncate(unmatched.join(", "), 200);
    return {
      text: null,
      malformed: [
        {
          field: feedField("configuration_json"),
          description: `'${maskedValue}' keeps a stored secret, but none is stored at ${where}; send the secret itself`,
        },
      ],
    };
  }
  return { text: JSON.stringify(value), malformed: [] };
}

export interface FeedObservationLike {
  externalTrackerId?: string;
  label?: string;
  assetId?: string;
  tags?: string;
}

export interface FeedObservationExtras {
  /** Trimmed; empty only when there are violations. */
  externalTrackerId: string;
  label: string | null;
  /** Lower-cased uuid. */
  assetId: string | null;
  tags: string | null;
  malformed: FieldViolation[];
}

/** Proto path of a feed observation field, e.g. `observation.external_tracker_id`. */
export const observationField = (name: string): string => `observation.${name}`;

/** Checks the fields a feed observation has beyond the ingest ones. */
export function checkFeedObservation(input: FeedObservationLike): FeedObservationExtras {
  const malformed: FieldViolation[] = [];
  const externalTrackerId = input.externalTrackerId?.trim() ?? "";
  if (input.externalTrackerId === undefined) {
    malformed.push({ field: observationField("external_tracker_id"), description: "is required" });
  } else if (externalTrackerId === "") {
    malformed.push({ field: observationField("external_tracker_id"), description: "must not be blank" });
  } else if (externalTrackerId.length > maxExternalTrackerIdLength) {
    malformed.push({
      field: observationField("external_tracker_id"),
      description: `must be at most ${maxExternalTrackerIdLength} characters`,
    });
  }
  if (input.label !== undefined && input.label.length > maxLabelLength) {
    malformed.push({ field: observationField("label"), description: `must be at most ${maxLabelLength} characters` });
  }
  if (input.tags !== undefined && input.tags.length > maxTagsLength) {
    malformed.push({ field: observationField("tags"), description: `must be at most ${maxTagsLength} characters` });
  }
  if (input.assetId !== undefined && !isUuid(input.assetId)) {
    malformed.push({ field: observationField("asset_id"), description: `'${truncate(input.assetId)}' is not a valid uuid` });
  }
  return {
    externalTrackerId,
    label: input.label ?? null,
    assetId: input.assetId?.toLowerCase() ?? null,
    tags: input.tags ?? null,
    malformed,
  };
}

/** The identifier of the device a feed's tracker maps to. */
export function feedDeviceIdentifier(provider: string, externalTrackerId: string): string {
  return `${provider}:${externalTrackerId}`;
}

/** Tags of a device a feed creates: its defaults, then the observation's; refused beyond the device bound. */
export function createdDeviceTags(defaultTags: string | null, tags: string | null): { tags: string | null; malformed: FieldViolation[] } {
  const merged = mergeTags(defaultTags, tags);
  if (merged !== null && merged.length > maxTagsLength) {
    return {
      tags: null,
      malformed: [
        { field: observationField("tags"), description: `with the feed's default tags, must be at most ${maxTagsLength} characters` },
      ],
    };
  }
  return { tags: merged, malformed: [] };
}
