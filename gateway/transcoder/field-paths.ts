// Field lookup by either JSON form of a name, and what a string from a URL can set.
// Lookup tables are built once per message type and shared by every route.
import { ScalarType, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import type { JsonNamingName } from "../style.js";

const byNameCache = new WeakMap<DescMessage, Map<string, DescField>>();

/** A field by its proto name or its JSON name, as the proto3 JSON mapping accepts both. */
export function fieldByName(message: DescMessage, name: string): DescField | undefined {
  let map = byNameCache.get(message);
  if (!map) {
    map = new Map();
    for (const f of message.fields) {
      map.set(f.name, f);
      map.set(f.jsonName, f);
    }
    byNameCache.set(message, map);
  }
  return map.get(name);
}

// Messages whose JSON form is a single string or scalar, so one URL value can set them.
const STRING_FORM_TYPES = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"]);

function isStringForm(message: DescMessage): boolean {
  return STRING_FORM_TYPES.has(message.typeName) || isWrapperDesc(message);
}

/** A message whose fields can be walked into by a dotted path. */
export function isPlainMessage(message: DescMessage): boolean {
  return !message.typeName.startsWith("google.protobuf.") || message.typeName === "google.protobuf.Empty";
}

/** Converts one URL string to the JSON value that the proto3 JSON parser expects for a field. */
export type UrlValueConverter = (value: string) => JsonValue;

const asIs: UrlValueConverter = (v) => v;
// Booleans are JSON literals, not strings; anything else is left for the parser to reject.
const asBool: UrlValueConverter = (v) => (v === "true" ? true : v === "false" ? false : v);
// Enums go by name; a number is accepted too.
const asEnum: UrlValueConverter = (v) => (/^-?\d+$/.test(v) ? Number(v) : v);

/**
 * The converter for a leaf field that a URL can set, or undefined when it cannot: only scalars,
 * enums and string-form well-known types, singular or repeated.
 */
export function urlConverterOf(field: DescField): UrlValueConverter | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.BOOL ? asBool : asIs;
    case "enum":
      return asEnum;
    case "message":
      return messageConverter(field.message);
    case "list":
      if (field.listKind === "scalar") return field.scalar === ScalarType.BOOL ? asBool : asIs;
      if (field.listKind === "enum") return asEnum;
      return messageConverter(field.message);
    case "map":
      return undefined;
  }
}

function messageConverter(message: DescMessage): UrlValueConverter | undefined {
  if (!isStringForm(message)) return undefined;
  if (message.typeName === "google.protobuf.BoolValue") return asBool;
  return asIs;
}

/** Outcome of resolving a dotted name like `filter.author.display_name`. */
export type ResolvedPath = { readonly ok: true; readonly fields: readonly DescField[] } | { readonly ok: false; readonly reason: string };

/** Walks a dotted path; every step before the last must be a singular plain message field. */
export function resolveFieldPath(root: DescMessage, parts: readonly string[]): ResolvedPath {
  const fields: DescField[] = [];
  let message: DescMessage | undefined = root;
  for (let i = 0; i < parts.length; i++) {
    const field: DescField | undefined = message && fieldByName(message, parts[i]!);
    if (!field) return { ok: false, reason: "unknown field" };
    fields.push(field);
    if (i < parts.length - 1) {
      if (field.fieldKind !== "message" || !isPlainMessage(field.message)) {
        return { ok: false, reason: `"${parts.slice(0, i + 1).join(".")}" is not a message` };
      }
      message = field.message;
    }
  }
  return { ok: true, fields };
}

/** Canonical identity of a field path, independent of how a client spelled it. */
export function canonicalPath(fields: readonly DescField[]): string {
  return fields.map((f) => f.name).join(".");
}

/**
 * Rewrites a service's field path (a BadRequest violation, say) to what a REST client sees:
 * names in the front's naming, relative to the body when the body is one field. A path that
 * does not resolve is returned as it came.
 */
export function clientFieldPath(input: DescMessage, bodyField: DescField | undefined, naming: JsonNamingName, path: string): string {
  const steps = path.split(".");
  const out: string[] = [];
  let message: DescMessage | undefined = input;
  let strip = false;
  for (let i = 0; i < steps.length; i++) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\]]*\])*)$/.exec(steps[i]!);
    const field: DescField | undefined = m && message ? fieldByName(message, m[1]!) : undefined;
    if (!m || !field) {
      // A path relative to the body field is already what the client sees.
      if (i === 0 && bodyField?.message) {
        return clientFieldPath(bodyField.message, undefined, naming, path);
      }
      return path;
    }
    if (i === 0 && field === bodyField) strip = true;
    out.push((naming === "proto-name" ? field.name : field.jsonName) + m[2]);
    message = field.message;
  }
  return (strip ? out.slice(1) : out).join(".") || path;
}
