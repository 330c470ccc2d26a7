// Builds the request message of a route from path variables, query parameters and the JSON body.
// Everything that depends only on the rule is compiled once; per request we only fill values.
import {
  create,
  fromJson,
  getOption,
  mergeFromJson,
  type DescField,
  type DescMessage,
  type DescMethod,
  type JsonObject,
  type JsonReadOptions,
  type JsonValue,
  type Message,
} from "@bufbuild/protobuf";
import { body_optional } from "../../gen/meshwork/api/v1/options_pb.js";
import { badRequest, HttpError } from "../errors/http-error.js";
import type { HttpBinding } from "./http-rule.js";
import { canonicalPath, resolveFieldPath, urlConverterOf, type UrlValueConverter } from "./field-paths.js";
import { describeElement, describeField, diagnoseJson } from "./json-diagnosis.js";
import { parseQuery } from "./query-string.js";

interface PathParam {
  /** The field path as the template writes it, which is also how errors name it. */
  readonly name: string;
  readonly field: DescField;
  readonly keys: readonly string[];
  readonly start: number;
  readonly end: number;
  readonly toEnd: boolean;
  readonly multiSegment: boolean;
  readonly convert: UrlValueConverter;
}

interface QueryTarget {
  readonly field: DescField;
  readonly keys: readonly string[];
  readonly repeated: boolean;
  readonly convert: UrlValueConverter;
}

export type BodyKind = "none" | "all" | "field";

export interface RequestPlan {
  readonly input: DescMessage;
  readonly body: BodyKind;
  readonly bodyField: DescField | undefined;
  /**
   * The body is a google.api.HttpBody (the whole request, or the body field): its bytes as they
   * came, with their content type, never parsed as JSON.
   */
  readonly rawBody: boolean;
  /** No body, or an empty one, reads as `{}` (the method's body_optional option). */
  readonly bodyOptional: boolean;
  readonly pathParams: readonly PathParam[];
  readonly readOptions: Partial<JsonReadOptions>;
  /** Field paths bound by the path; the query may not set them again. */
  readonly pathBound: ReadonlySet<string>;
  /** Resolved query names, filled on first use; bounded because clients choose the names. */
  readonly queryCache: Map<string, QueryTarget | HttpError>;
}

const QUERY_CACHE_LIMIT = 256;
const HTTP_BODY = "google.api.HttpBody";

/** The JSON of a google.api.HttpBody holding `data` as received. */
export function rawBodyJson(contentType: string | undefined, data: Buffer): JsonValue {
  return { contentType: contentType ?? "application/octet-stream", data: data.toString("base64") };
}

/** Validates a binding against its method's input and compiles it. Throws on a bad rule. */
export function compileRequestPlan(method: DescMethod, binding: HttpBinding, readOptions: Partial<JsonReadOptions>): RequestPlan {
  const input = method.input;
  const where = `${method.parent.typeName}.${method.name} (${binding.httpMethod} ${binding.path.template})`;
  let body: BodyKind = "none";
  let bodyField: DescField | undefined;
  if (binding.body === "*") {
    body = "all";
  } else if (binding.body !== "") {
    body = "field";
    bodyField = input.fields.find((f) => f.name === binding.body);
    if (!bodyField) throw new Error(`${where}: body field "${binding.body}" is not in ${input.typeName}`);
  }
  if (body !== "none" && binding.httpMethod === "GET") {
    throw new Error(`${where}: a GET rule cannot take a body`);
  }

  const pathParams: PathParam[] = [];
  const pathBound = new Set<string>();
  for (const v of binding.path.variables) {
    const name = v.fieldPath.join(".");
    const resolved = resolveFieldPath(input, v.fieldPath);
    if (!resolved.ok) throw new Error(`${where}: path variable "${name}": ${resolved.reason}`);
    const field = resolved.fields[resolved.fields.length - 1]!;
    const convert = urlConverterOf(field);
    if (!convert || field.fieldKind === "list" || field.fieldKind === "map") {
      throw new Error(`${where}: path variable "${name}" must be a singular scalar, enum or wrapper field`);
    }
    pathBound.add(canonicalPath(resolved.fields));
    pathParams.push({
      name,
      field,
      keys: resolved.fields.map((f) => f.jsonName),
      start: v.start,
      end: v.end,
      toEnd: v.toEnd,
      multiSegment: v.toEnd || v.end - v.start > 1,
      convert,
    });
  }
  const bodyOptional = body !== "none" && getOption(method, body_optional);
  const rawBody = (body === "all" && input.typeName === HTTP_BODY) || (body === "field" && bodyField?.message?.typeName === HTTP_BODY);
  return { input, body, bodyField, rawBody, bodyOptional, pathParams, readOptions, pathBound, queryCache: new Map() };
}

/** One value destined for the message, remembered so a failed parse can name its source. */
interface Placed {
  readonly source: "path" | "query";
  readonly name: string;
  readonly field: DescField;
  readonly keys: readonly string[];
  readonly value: JsonValue;
}

/**
 * Builds the request message. `segments` are the raw request path segments the trie matched;
 * `body` is the parsed JSON body (undefined when the rule has none).
 */
export function buildRequest(plan: RequestPlan, segments: readonly string[], rawQuery: string, body: JsonValue | undefined): Message {
  const tree: JsonObject = {};
  const placed: Placed[] = [];
  for (const p of plan.pathParams) {
    const raw = p.toEnd ? segments.slice(p.start).join("/") : segments.slice(p.start, p.end).join("/");
    const value = p.convert(decodePathValue(raw, p.multiSegment, p.name));
    place(tree, p.keys, value, false, p.name);
    placed.push({ source: "path", name: p.name, field: p.field, keys: p.keys, value });
  }
  if (rawQuery !== "") {
    for (const [name, text] of parseQuery(rawQuery)) {
      const target = resolveQuery(plan, name);
      const value = target.convert(text);
      place(tree, target.keys, value, target.repeated, name);
      placed.push({ source: "query", name, field: target.field, keys: target.keys, value });
    }
  }

  let message: Message;
  if (plan.body === "none") {
    message = placed.length === 0 ? create(plan.input) : parseParams(plan, undefined, tree, placed);
    return message;
  }
  message = parseBody(plan, body ?? null);
  return placed.length === 0 ? message : parseParams(plan, message, tree, placed);
}

function parseBody(plan: RequestPlan, body: JsonValue): Message {
  const json: JsonValue = plan.body === "all" ? body : { [plan.bodyField!.jsonName]: body };
  try {
    return fromJson(plan.input, json, plan.readOptions);
  } catch {
    const target = plan.body === "all" ? plan.input : plan.bodyField!.message;
    const problem = target
      ? diagnoseJson(target, body, plan.readOptions)
      : { property: "", reason: `expected ${describeField(plan.bodyField!)}` };
    if (problem.property === "") throw badRequest(`invalid request body: ${problem.reason}`);
    throw badRequest(`invalid request body: property "${problem.property}": ${problem.reason}`, problem.property, problem.reason);
  }
}

function parseParams(plan: RequestPlan, into: Message | undefined, tree: JsonObject, placed: Placed[]) {
  try {
    return into ? mergeFromJson(plan.input, into, tree, plan.readOptions) : fromJson(plan.input, tree, plan.readOptions);
  } catch {
    // Find the culprit by parsing each value alone.
    for (const p of placed) {
      const single: JsonObject = {};
      place(single, p.keys, p.field.fieldKind === "list" ? [p.value] : p.value, false, p.name);
      try {
        fromJson(plan.input, single, plan.readOptions);
      } catch {
        const reason = `expected ${describeElement(p.field)}`;
        throw badRequest(`${p.source} parameter "${p.name}" has an invalid value ${preview(p.value)}: ${reason}`, p.name, reason);
      }
    }
    throw badRequest("invalid path or query parameters");
  }
}

function resolveQuery(plan: RequestPlan, name: string): QueryTarget {
  let target = plan.queryCache.get(name);
  if (!target) {
    target = compileQueryTarget(plan, name);
    if (plan.queryCache.size < QUERY_CACHE_LIMIT) plan.queryCache.set(name, target);
  }
  if (target instanceof HttpError) throw target;
  return target;
}

function compileQueryTarget(plan: RequestPlan, name: string): QueryTarget | HttpError {
  const unknown = (reason: string) =>
    badRequest(`unknown query parameter "${name}": ${reason}`, name, `unknown query parameter: ${reason}`);
  if (plan.body === "all") return unknown("this operation takes every field from the body");
  const resolved = resolveFieldPath(plan.input, name.split("."));
  if (!resolved.ok) return unknown(resolved.reason);
  const fields = resolved.fields;
  if (fields[0] === plan.bodyField) return unknown("the field is set by the request body");
  for (let i = 1; i <= fields.length; i++) {
    if (plan.pathBound.has(canonicalPath(fields.slice(0, i)))) {
      return unknown("the field is set by the path");
    }
  }
  const leaf = fields[fields.length - 1]!;
  const convert = urlConverterOf(leaf);
  if (!convert) return unknown("the field cannot be set from a query string");
  return { field: leaf, keys: fields.map((f) => f.jsonName), repeated: leaf.fieldKind === "list", convert };
}

function place(tree: JsonObject, keys: readonly string[], value: JsonValue, repeated: boolean, label: string) {
  let node = tree;
  const last = keys.length - 1;
  for (let i = 0; i < last; i++) {
    node = (node[keys[i]!] ??= {}) as JsonObject;
  }
  const key = keys[last]!;
  if (repeated) {
    ((node[key] ??= []) as JsonValue[]).push(value);
  } else if (key in node) {
    throw badRequest(`query parameter "${label}" is given more than once`, label, "given more than once");
  } else {
    node[key] = value;
  }
}

/**
 * One segment is fully decoded. Several keep "%2F" as it came, so an encoded slash stays
 * distinguishable from a separator (as google.api.http specifies for multi-segment variables).
 */
function decodePathValue(raw: string, multiSegment: boolean, name: string): string {
  if (!raw.includes("%")) return raw;
  try {
    if (!multiSegment) return decodeURIComponent(raw);
    return raw
      .split(/%2F/i)
      .map((piece) => decodeURIComponent(piece))
      .join("%2F");
  } catch {
    throw badRequest(`path parameter "${name}" is not valid percent-encoding`, name, "invalid percent-encoding");
  }
}

function preview(value: JsonValue): string {
  const text = JSON.stringify(value);
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}
