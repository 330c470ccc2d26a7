// A protobuf request message as the JSON Schema of a tool's parameters: the message's JSON form
// (lowerCamel names, enums by name, 64-bit integers as integers, bytes as base64, the well-known
// types as their JSON), with the fields marked `(google.api.field_behavior) = REQUIRED` required.
import { type DescField, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../../../gen/google/api/field_behavior_pb.js";
import type { JsonSchema, ToolParameters } from "../tool.js";

const WELL_KNOWN: Record<string, JsonSchema> = {
  "google.protobuf.Timestamp": { type: "string", description: "RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z" },
  "google.protobuf.Duration": { type: "string", description: "Seconds with an s suffix, e.g. 1.5s" },
  "google.protobuf.FieldMask": { type: "string", description: "Comma-separated lowerCamel field paths" },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Empty": { type: "object", properties: {} },
  "google.protobuf.Any": { type: "object", description: "With @type naming the message" },
  "google.protobuf.DoubleValue": { type: "number" },
  "google.protobuf.FloatValue": { type: "number" },
  "google.protobuf.Int64Value": { type: "integer" },
  "google.protobuf.UInt64Value": { type: "integer" },
  "google.protobuf.Int32Value": { type: "integer" },
  "google.protobuf.UInt32Value": { type: "integer" },
  "google.protobuf.BoolValue": { type: "boolean" },
  "google.protobuf.StringValue": { type: "string" },
  "google.protobuf.BytesValue": { type: "string", description: "base64" },
};

function scalar(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", description: "base64" };
    default:
      return { type: "integer" };
  }
}

function enumSchema(field: { enum: { values: readonly { name: string }[] } }): JsonSchema {
  return { type: "string", enum: field.enum.values.map((v) => v.name) };
}

export const isRequired = (field: DescField) => getOption(field, field_behavior).includes(FieldBehavior.REQUIRED);

function valueSchema(field: DescField, seen: readonly string[]): JsonSchema {
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field.scalar);
    case "enum":
      return enumSchema(field);
    case "message":
      return messageSchema(field.message, seen);
    case "list": {
      const items =
        field.listKind === "scalar"
          ? scalar(field.scalar)
          : field.listKind === "enum"
            ? enumSchema(field)
            : messageSchema(field.message, seen);
      return { type: "array", items };
    }
    case "map": {
      const values =
        field.mapKind === "scalar"
          ? scalar(field.scalar)
          : field.mapKind === "enum"
            ? enumSchema(field)
            : messageSchema(field.message, seen);
      return { type: "object", additionalProperties: values };
    }
  }
}

/** A message as JSON Schema; a message met again inside itself is a plain object (no recursion). */
export function messageSchema(message: DescMessage, seen: readonly string[] = []): JsonSchema {
  const known = WELL_KNOWN[message.typeName];
  if (known) return { ...known };
  if (seen.includes(message.typeName)) return { type: "object", description: message.typeName };
  const inner = [...seen, message.typeName];
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    properties[field.jsonName] = valueSchema(field, inner);
    if (isRequired(field)) required.push(field.jsonName);
  }
  return { type: "object", properties, ...(required.length ? { required } : {}) };
}

export function parametersOf(message: DescMessage): ToolParameters {
  const schema = messageSchema(message);
  return { type: "object", properties: schema.properties ?? {}, ...(schema.required ? { required: schema.required } : {}) };
}
