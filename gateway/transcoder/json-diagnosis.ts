// Explains why protobuf-es refused a JSON value, in the client's terms: which property, and
// what was expected. Runs only after a parse failed, so it may be slow and thorough.
import { fromJson, ScalarType, type DescField, type DescMessage, type JsonReadOptions, type JsonValue } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { fieldByName, isPlainMessage } from "./field-paths.js";

export interface JsonProblem {
  /** Dotted property path as the client wrote it; "" for the value as a whole. */
  readonly property: string;
  readonly reason: string;
}

/** Finds the first property of `json` that `message` cannot take. */
export function diagnoseJson(message: DescMessage, json: JsonValue, options: Partial<JsonReadOptions>, path = ""): JsonProblem {
  if (!isPlainMessage(message)) {
    return { property: path, reason: `expected ${describeMessage(message)}` };
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return { property: path, reason: "expected a JSON object" };
  }
  for (const [key, value] of Object.entries(json)) {
    const property = path === "" ? key : `${path}.${key}`;
    const field = fieldByName(message, key);
    if (!field) return { property, reason: "unknown property" };
    if (accepts(message, key, value, options)) continue;
    const nested = diagnoseNested(field, value, options, property);
    if (!nested && holdsLoneSurrogate(value)) return { property, reason: "must not contain an unpaired UTF-16 surrogate" };
    return nested ?? { property, reason: `expected ${describeField(field)}` };
  }
  // Every property passes alone: the same field was given under both of its names.
  return { property: path, reason: "a field is given more than once (under its two names)" };
}

// JSON may escape half a surrogate pair ("\ud800"); protobuf-es refuses such a string as invalid
// UTF-8, which "expected a string" would misdescribe.
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function holdsLoneSurrogate(value: JsonValue): boolean {
  if (typeof value === "string") return loneSurrogate.test(value);
  return Array.isArray(value) && value.some((item) => typeof item === "string" && loneSurrogate.test(item));
}

function diagnoseNested(field: DescField, value: JsonValue, options: Partial<JsonReadOptions>, property: string): JsonProblem | undefined {
  const target = field.message;
  if (!target || !isPlainMessage(target)) return undefined;
  if (field.fieldKind === "message") return diagnoseJson(target, value, options, property);
  if (field.fieldKind === "list" && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i]!;
      if (item === null) return { property: `${property}[${i}]`, reason: "list items must not be null" };
      if (!acceptsMessage(target, item, options)) {
        return diagnoseJson(target, item, options, `${property}[${i}]`);
      }
    }
  }
  if (field.fieldKind === "map" && value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, item] of Object.entries(value)) {
      if (item !== null && !acceptsMessage(target, item, options)) {
        return diagnoseJson(target, item, options, `${property}.${k}`);
      }
    }
  }
  return undefined;
}

function accepts(message: DescMessage, key: string, value: JsonValue, options: Partial<JsonReadOptions>): boolean {
  return acceptsMessage(message, { [key]: value }, options);
}

function acceptsMessage(message: DescMessage, json: JsonValue, options: Partial<JsonReadOptions>) {
  try {
    fromJson(message, json, options);
    return true;
  } catch {
    return false;
  }
}

/** What a client should send for a field, for error messages. */
export function describeField(field: DescField): string {
  const one = describeElement(field);
  if (field.fieldKind === "list") return `an array where each item is ${one}`;
  if (field.fieldKind === "map") return `an object where each value is ${one}`;
  return one;
}

/** What one value of a field (one list item) should be. */
export function describeElement(field: DescField): string {
  if (field.enum) {
    const names = field.enum.values.map((v) => v.name);
    const shown = names.length > 8 ? [...names.slice(0, 8), "..."] : names;
    return `one of ${shown.join(", ")}`;
  }
  if (field.message) return describeMessage(field.message);
  return describeScalar(field.scalar!);
}

function describeMessage(message: DescMessage): string {
  switch (message.typeName) {
    case "google.protobuf.Timestamp":
      return "an RFC 3339 timestamp";
    case "google.protobuf.Duration":
      return 'a duration in seconds such as "1.5s"';
    case "google.protobuf.FieldMask":
      return "comma-separated field paths";
  }
  if (isWrapperDesc(message)) return describeScalar(message.fields[0].scalar);
  return "a JSON object";
}

function describeScalar(scalar: ScalarType): string {
  switch (scalar) {
    case ScalarType.BOOL:
      return "true or false";
    case ScalarType.STRING:
      return "a string";
    case ScalarType.BYTES:
      return "base64 data";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return "a number";
    default:
      return "an integer";
  }
}
