// The arguments of a call, checked against the tool's JSON Schema before it runs: JSON text parsed
// (bad JSON is an error), the envelope parameters taken out, unknown properties dropped, a wrong
// type or a missing required argument answered with a message naming the argument, defaults filled.
import type { JsonSchema, ToolParameters } from "./tool.js";

/** Taken by every tool and stripped before it runs (kept for a tool that declares one itself, e.g. exec's timeoutMs). */
export interface Envelope {
  maxResultChars?: number;
  noContext: boolean;
  timeoutMs?: number;
  summary: boolean;
}

export const envelopeNames = ["maxResultChars", "noContext", "timeoutMs", "summary", "noStream"] as const;

export class ArgumentError extends Error {
  override name = "ArgumentError";
}

/** The raw arguments as an object; ArgumentError when they are not a JSON object. */
export function parseArguments(raw: string | Record<string, unknown> | undefined): Record<string, unknown> {
  if (raw === undefined) return {};
  let value: unknown = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") return {};
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new ArgumentError(`the arguments are not valid JSON (${(error as Error).message})`);
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ArgumentError("the arguments must be a JSON object");
  return value as Record<string, unknown>;
}

/** The envelope of `args`, checked; the rest of the arguments (the envelope names the tool does not declare removed). */
export function takeEnvelope(
  args: Record<string, unknown>,
  declared: ToolParameters,
): { envelope: Envelope; rest: Record<string, unknown> } {
  const positive = (name: string): number | undefined => {
    const value = args[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
      throw new ArgumentError(`argument '${name}' must be a non-negative integer`);
    return value;
  };
  const flag = (name: string): boolean => {
    const value = args[name];
    if (value === undefined || value === null) return false;
    if (typeof value !== "boolean") throw new ArgumentError(`argument '${name}' must be a boolean`);
    return value;
  };
  const envelope: Envelope = {
    maxResultChars: positive("maxResultChars"),
    noContext: flag("noContext"),
    timeoutMs: positive("timeoutMs"),
    summary: flag("summary"),
  };
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    if ((envelopeNames as readonly string[]).includes(name) && !Object.hasOwn(declared.properties, name)) continue;
    rest[name] = value;
  }
  return { envelope, rest };
}

/** `args` checked against `schema`: unknown properties dropped, defaults filled; ArgumentError naming the argument otherwise. */
export function checkArguments(args: Record<string, unknown>, schema: ToolParameters): Record<string, unknown> {
  return checkObject(args, schema.properties, schema.required ?? [], "");
}

function checkObject(
  value: Record<string, unknown>,
  properties: Record<string, JsonSchema>,
  required: readonly string[],
  prefix: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const given = Object.hasOwn(value, name) ? value[name] : undefined;
    const path = `${prefix}${name}`;
    if (given === undefined || given === null) {
      if (schema.default !== undefined) out[name] = structuredClone(schema.default);
      else if (required.includes(name)) throw new ArgumentError(`missing required argument '${path}'`);
      continue;
    }
    out[name] = checkValue(given, schema, path);
  }
  return out;
}

function checkValue(value: unknown, schema: JsonSchema, path: string): unknown {
  const wrong = (expected: string) =>
    new ArgumentError(
      `argument '${path}' must be ${expected} (got ${Array.isArray(value) ? "array" : value === null ? "null" : typeof value})`,
    );
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") throw wrong("a string");
      break;
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) throw wrong("an integer");
      break;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) throw wrong("a number");
      break;
    case "boolean":
      if (typeof value !== "boolean") throw wrong("a boolean");
      break;
    case "array":
      if (!Array.isArray(value)) throw wrong("an array");
      return schema.items ? value.map((item, i) => checkValue(item, schema.items!, `${path}[${i}]`)) : value;
    case "object":
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw wrong("an object");
      return schema.properties
        ? checkObject(value as Record<string, unknown>, schema.properties, schema.required ?? [], `${path}.`)
        : value;
  }
  if (schema.enum && !schema.enum.includes(value as string | number))
    throw new ArgumentError(`argument '${path}' must be one of ${schema.enum.join(", ")} (got ${JSON.stringify(value)})`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum)
      throw new ArgumentError(`argument '${path}' must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum)
      throw new ArgumentError(`argument '${path}' must be at most ${schema.maximum}`);
  }
  return value;
}
