// Renders a response message as the REST client sees it: the service's JSON naming, every
// documented property present ([] and zero values included), optional ones as null on request,
// and only the response_body field when the rule names one. A google.api.HttpBody (the response
// itself, or a set top-level field of it) is answered raw instead of as JSON.
import {
  toJson,
  type DescField,
  type DescMessage,
  type DescMethod,
  type JsonObject,
  type JsonValue,
  type JsonWriteOptions,
  type Message,
  type Registry,
} from "@bufbuild/protobuf";
import type { JsonNamingName, ServiceStyle } from "../style.js";
import type { HttpBinding } from "./http-rule.js";
import { isPlainMessage } from "./field-paths.js";

export interface ResponsePlan {
  readonly status: number;
  /** False for 204: the message is not written. */
  readonly writesBody: boolean;
  toJson(message: Message): JsonValue;
  /** The raw answer a google.api.HttpBody carries, or undefined when the answer is JSON. */
  rawBody(message: Message): RawBody | undefined;
}

/** An HTTP body the service wrote itself, sent as is. */
export interface RawBody {
  readonly contentType: string;
  readonly data: Uint8Array;
}

const HTTP_BODY = "google.api.HttpBody";
// What an HttpBody that names no content type is, by RFC 9110's own default for unknown bytes.
const DEFAULT_RAW_TYPE = "application/octet-stream";

export function compileResponsePlan(
  method: DescMethod,
  binding: HttpBinding,
  style: ServiceStyle,
  status: number,
  registry: Registry | undefined,
): ResponsePlan {
  const output = method.output;
  const write = messageJsonWriter(output, style, registry);
  const where = `${method.parent.typeName}.${method.name}`;
  const wholeIsRaw = output.typeName === HTTP_BODY;
  const rawFields = wholeIsRaw ? [] : output.fields.filter(isHttpBodyField);
  if ((wholeIsRaw || rawFields.length > 0) && status === 204) {
    throw new Error(`${where}: a google.api.HttpBody answer cannot have success_status 204`);
  }
  // HttpBody fields are the file, never a JSON property (not even a null).
  const rawKeys = rawFields.map((f) => keyOf(f, style.jsonNaming));
  let pick: string | undefined;
  if (binding.responseBody !== "") {
    const field = output.fields.find((f) => f.name === binding.responseBody);
    if (!field) {
      throw new Error(`${where}: response_body "${binding.responseBody}" is not in ${output.typeName}`);
    }
    pick = keyOf(field, style.jsonNaming);
  }
  return {
    status,
    writesBody: status !== 204,
    toJson(message: Message): JsonValue {
      const json = write(message);
      for (const key of rawKeys) delete json[key];
      // An unset message named by response_body has no JSON of its own: it is null.
      return pick === undefined ? json : (json[pick] ?? null);
    },
    rawBody(message: Message): RawBody | undefined {
      if (wholeIsRaw) return rawOf(message as unknown as HttpBodyShape);
      for (const field of rawFields) {
        const value = (message as unknown as Record<string, HttpBodyShape | undefined>)[field.localName];
        if (value !== undefined) return rawOf(value);
      }
      return undefined;
    },
  };
}

/**
 * How a service's REST answers write a message of this type: its JSON naming, every documented
 * property present, optional ones as null when the style asks for it. Also used for messages an
 * answer carries packed in a google.protobuf.Any (server-sent event data).
 */
export function messageJsonWriter(
  desc: DescMessage,
  style: ServiceStyle,
  registry: Registry | undefined,
): (message: Message) => JsonObject {
  const options: JsonWriteOptions = {
    alwaysEmitImplicit: true,
    enumAsInteger: false,
    useProtoFieldName: style.jsonNaming === "proto-name",
    registry,
  };
  const nulls = style.emitNullForUnset ? nullPlanOf(desc, style.jsonNaming) : undefined;
  const fill = nulls && hasWork(desc) ? nulls : undefined;
  return (message) => {
    const json = toJson(desc, message, options) as JsonObject;
    return fill ? fillNulls(json, fill) : json;
  };
}

/** The two fields of google.api.HttpBody the gateway reads, without importing its generated code. */
interface HttpBodyShape {
  readonly contentType: string;
  readonly data: Uint8Array;
}

function rawOf(body: HttpBodyShape): RawBody {
  return { contentType: body.contentType === "" ? DEFAULT_RAW_TYPE : body.contentType, data: body.data };
}

function isHttpBodyField(field: DescField): boolean {
  return field.fieldKind === "message" && field.message.typeName === HTTP_BODY;
}

function keyOf(field: DescField, naming: JsonNamingName): string {
  return naming === "proto-name" ? field.name : field.jsonName;
}

interface NullPlan {
  /** Every field's key in declaration order, and whether it is written as null when unset. */
  readonly keys: { readonly key: string; readonly nullable: boolean }[];
  readonly nullableKeys: string[];
  readonly nested: NestedPlan[];
}

interface NestedPlan {
  readonly key: string;
  readonly kind: "single" | "list" | "map";
  readonly plan: NullPlan;
}

const nullPlans = {
  "lower-camel": new WeakMap<DescMessage, NullPlan>(),
  "proto-name": new WeakMap<DescMessage, NullPlan>(),
};

/**
 * Fields with explicit presence (proto3 `optional`, message fields) are nullable. Members of a
 * real oneof are not: a null for each unchosen member would not parse back as the same message.
 */
function isNullable(field: DescField): boolean {
  return (
    (field.fieldKind === "scalar" || field.fieldKind === "enum" || field.fieldKind === "message") &&
    field.oneof === undefined &&
    field.presence === PRESENCE_EXPLICIT
  );
}

function nullPlanOf(message: DescMessage, naming: JsonNamingName): NullPlan {
  const cache = nullPlans[naming];
  const cached = cache.get(message);
  if (cached) return cached;
  const plan: NullPlan = { keys: [], nullableKeys: [], nested: [] };
  cache.set(message, plan); // before recursing: message types may be recursive
  for (const field of message.fields) {
    if (isHttpBodyField(field)) continue;
    const key = keyOf(field, naming);
    const nullable = isNullable(field);
    plan.keys.push({ key, nullable });
    if (nullable) plan.nullableKeys.push(key);
    const child = field.message;
    if (child && isPlainMessage(child) && hasWork(child)) {
      const kind = field.fieldKind === "list" ? "list" : field.fieldKind === "map" ? "map" : "single";
      plan.nested.push({ key, kind, plan: nullPlanOf(child, naming) });
    }
  }
  return plan;
}

// FeatureSet.FieldPresence.EXPLICIT; a literal to keep the descriptor protos out of the import graph.
const PRESENCE_EXPLICIT = 1;

const workCache = new WeakMap<DescMessage, boolean>();
const inProgress = new Set<DescMessage>();

/** Whether a message or anything inside it can need a null. */
function hasWork(message: DescMessage): boolean {
  const cached = workCache.get(message);
  if (cached !== undefined) return cached;
  // A cycle is assumed to need work; walking a little more is harmless.
  if (inProgress.has(message)) return true;
  inProgress.add(message);
  let work = false;
  for (const field of message.fields) {
    if (isHttpBodyField(field)) continue;
    if (isNullable(field)) work = true;
    const child = field.message;
    if (child && isPlainMessage(child) && hasWork(child)) work = true;
  }
  inProgress.delete(message);
  workCache.set(message, work);
  return work;
}

function fillNulls(json: JsonObject, plan: NullPlan): JsonObject {
  let out = json;
  for (const key of plan.nullableKeys) {
    if (!(key in json)) {
      // Rebuild in declaration order so nulls sit where the field is documented.
      out = {};
      for (const { key: k, nullable } of plan.keys) {
        const v = json[k];
        if (v !== undefined) out[k] = v;
        else if (nullable) out[k] = null;
      }
      break;
    }
  }
  for (const n of plan.nested) {
    const v = out[n.key];
    if (v === null || v === undefined || typeof v !== "object") continue;
    if (n.kind === "single") {
      out[n.key] = fillNulls(v as JsonObject, n.plan);
    } else if (n.kind === "list") {
      const list = v as JsonObject[];
      for (let i = 0; i < list.length; i++) list[i] = fillNulls(list[i]!, n.plan);
    } else {
      const map = v as Record<string, JsonObject>;
      for (const k of Object.keys(map)) map[k] = fillNulls(map[k]!, n.plan);
    }
  }
  return out;
}
