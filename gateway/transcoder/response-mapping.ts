// Renders a response message as the REST client sees it: the service's JSON naming, every
// documented property present ([] and zero values included), optional ones as null on request,
// and only the response_body field when the rule names one.
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
}

export function compileResponsePlan(
  method: DescMethod,
  binding: HttpBinding,
  style: ServiceStyle,
  status: number,
  registry: Registry | undefined,
): ResponsePlan {
  const output = method.output;
  const options: JsonWriteOptions = {
    alwaysEmitImplicit: true,
    enumAsInteger: false,
    useProtoFieldName: style.jsonNaming === "proto-name",
    registry,
  };
  let pick: string | undefined;
  if (binding.responseBody !== "") {
    const field = output.fields.find((f) => f.name === binding.responseBody);
    if (!field) {
      const where = `${method.parent.typeName}.${method.name}`;
      throw new Error(`${where}: response_body "${binding.responseBody}" is not in ${output.typeName}`);
    }
    pick = keyOf(field, style.jsonNaming);
  }
  const nulls = style.emitNullForUnset ? nullPlanOf(output, style.jsonNaming) : undefined;
  const fill = nulls && hasWork(output) ? nulls : undefined;
  return {
    status,
    writesBody: status !== 204,
    toJson(message: Message): JsonValue {
      let json = toJson(output, message, options) as JsonObject;
      if (fill) json = fillNulls(json, fill);
      // An unset message named by response_body has no JSON of its own: it is null.
      return pick === undefined ? json : (json[pick] ?? null);
    },
  };
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
