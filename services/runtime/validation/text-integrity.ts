// Refuses text PostgreSQL cannot store (NUL) or that would be silently altered on the way to it
// (unpaired UTF-16 surrogates become U+FFFD when encoded as UTF-8), for every caller, before any
// handler runs. Violations name the field by its proto path, like requiredFieldsInterceptor.
import { ScalarType, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { invalidArgument, type FieldViolation } from "../errors/index.js";

const NUL = "\u0000";
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string cannot be stored as text, or undefined when it can. */
export function textProblem(value: string): string | undefined {
  if (value.includes(NUL)) return "must not contain a NUL character (\\u0000)";
  if (loneSurrogate.test(value)) return "must not contain an unpaired UTF-16 surrogate";
  return undefined;
}

// Per message type: whether any string can be reached from it at all. Most request types carry
// ids and text, but many (paging, empty requests) do not and then cost one map lookup.
const holdsTextCache = new Map<string, boolean>();

function directlyHoldsText(field: DescField): boolean {
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING;
    case "list":
      return field.listKind === "scalar" && field.scalar === ScalarType.STRING;
    case "map":
      return field.mapKey === ScalarType.STRING || (field.mapKind === "scalar" && field.scalar === ScalarType.STRING);
    default:
      return false;
  }
}

function messageOf(field: DescField): DescMessage | undefined {
  if (field.fieldKind === "message") return field.message;
  if (field.fieldKind === "list" && field.listKind === "message") return field.message;
  if (field.fieldKind === "map" && field.mapKind === "message") return field.message;
  return undefined;
}

/** Reachability from the root, not a per-type recursion: a recursive type (Struct/Value) would
 * otherwise cache a partial answer for the types on the cycle. */
export function holdsText(schema: DescMessage): boolean {
  const cached = holdsTextCache.get(schema.typeName);
  if (cached !== undefined) return cached;
  const seen = new Set<string>([schema.typeName]);
  const queue = [schema];
  let found = false;
  while (!found && queue.length) {
    const message = queue.pop()!;
    for (const field of message.fields) {
      if (directlyHoldsText(field)) {
        found = true;
        break;
      }
      const inner = messageOf(field);
      if (inner && !seen.has(inner.typeName)) {
        seen.add(inner.typeName);
        queue.push(inner);
      }
    }
  }
  holdsTextCache.set(schema.typeName, found);
  return found;
}

function keyStep(key: string): string {
  // The gateway renames paths of the form name[...]; a key that would break that stays unnamed.
  return key.includes("]") || textProblem(key) ? "" : `[${key}]`;
}

// Well-known types the protobuf-es runtime represents as plain values (wrappers as primitives,
// Struct as a JSON object, Value as any JSON value); walked as JSON.
function checkJson(value: unknown, path: string, out: FieldViolation[], depth: number): void {
  if (typeof value === "string") {
    const problem = textProblem(value);
    if (problem) out.push({ field: path, description: problem });
    return;
  }
  // Deeper than any JSON the gateway or a Connect JSON client could send: a guard, not a limit.
  if (value === null || typeof value !== "object" || depth > 128) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkJson(item, `${path}[${i}]`, out, depth + 1));
    return;
  }
  if ((value as { $typeName?: unknown }).$typeName !== undefined) return;
  for (const [key, item] of Object.entries(value)) {
    const problem = textProblem(key);
    if (problem) out.push({ field: path, description: `has a key that ${problem}` });
    checkJson(item, path + keyStep(key), out, depth + 1);
  }
}

function checkValue(value: unknown, schema: DescMessage | undefined, path: string, out: FieldViolation[], depth: number): void {
  if (typeof value === "string") {
    const problem = textProblem(value);
    if (problem) out.push({ field: path, description: problem });
  } else if (schema && value !== null && typeof value === "object" && (value as { $typeName?: unknown }).$typeName === schema.typeName) {
    collect(value as Message, schema, `${path}.`, out, depth + 1);
  } else if (schema) {
    checkJson(value, path, out, depth);
  }
}

function collect(message: Message, schema: DescMessage, prefix: string, out: FieldViolation[], depth: number): void {
  if (depth > 128 || !holdsText(schema)) return;
  const record = message as unknown as Record<string, unknown>;
  for (const field of schema.fields) {
    let value: unknown;
    if (field.oneof) {
      const oneof = record[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (oneof?.case !== field.localName) continue;
      value = oneof.value;
    } else {
      value = record[field.localName];
    }
    if (value === undefined || value === null) continue;
    const path = prefix + field.name;
    switch (field.fieldKind) {
      case "scalar":
        if (typeof value === "string") checkValue(value, undefined, path, out, depth);
        break;
      case "enum":
        break;
      case "message":
        checkValue(value, field.message, path, out, depth);
        break;
      case "list":
        if (field.listKind === "enum" || !Array.isArray(value)) break;
        value.forEach((item, i) => checkValue(item, field.listKind === "message" ? field.message : undefined, `${path}[${i}]`, out, depth));
        break;
      case "map":
        for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
          const problem = field.mapKey === ScalarType.STRING ? textProblem(key) : undefined;
          if (problem) out.push({ field: path, description: `has a key that ${problem}` });
          if (field.mapKind === "scalar" || field.mapKind === "message") {
            checkValue(item, field.mapKind === "message" ? field.message : undefined, path + keyStep(key), out, depth);
          }
        }
        break;
    }
  }
}

/** The fields of a message whose text cannot be stored, by proto path. */
export function invalidTextFields(schema: DescMessage, message: Message): FieldViolation[] {
  if (!holdsText(schema)) return [];
  const out: FieldViolation[] = [];
  collect(message, schema, "", out, 0);
  return out;
}

async function* checkEach(messages: AsyncIterable<Message>, schema: DescMessage): AsyncIterable<Message> {
  for await (const message of messages) {
    const bad = invalidTextFields(schema, message);
    if (bad.length) throw invalidArgument(bad);
    yield message;
  }
}

/** Server interceptor: InvalidArgument naming every field whose text cannot be stored. */
export const textIntegrityInterceptor: Interceptor = (next) => (req) => {
  const schema = req.method.input;
  if (!holdsText(schema)) return next(req);
  if (req.stream) {
    // Each message of a client stream is checked as the handler reads it.
    return next({ ...req, message: checkEach(req.message, schema) });
  }
  const bad = invalidTextFields(schema, req.message);
  if (bad.length) return Promise.reject(invalidArgument(bad));
  return next(req);
};
