// Event messages made at run time for tests of the outbox and the bus: each fixture gets
// subjects of its own (`<service>.v1.widget.<verb>`), so its stream overlaps no other, while
// the messages carry the (meshwork.api.v1.event) option exactly as generated ones do.
import { create, createFileRegistry, setExtension, type DescMessage } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_timestamp,
  MessageOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { event, EventOptionsSchema } from "../../gen/meshwork/api/v1/options_pb.js";

export interface WidgetEvents {
  /** `<service>.v1.widget.created` and so on; each is { event_id, occurred_at, value }. */
  created: DescMessage;
  updated: DescMessage;
  deleted: DescMessage;
  /** Has no subject option: not an event message. */
  plain: DescMessage;
}

export function widgetEvents(service: string): WidgetEvents {
  const pkg = `${service}.v1`;
  const fields = [
    { name: "event_id", jsonName: "eventId", number: 1, type: FieldDescriptorProto_Type.STRING },
    {
      name: "occurred_at",
      jsonName: "occurredAt",
      number: 2,
      type: FieldDescriptorProto_Type.MESSAGE,
      typeName: ".google.protobuf.Timestamp",
    },
    { name: "value", jsonName: "value", number: 3, type: FieldDescriptorProto_Type.STRING },
  ].map((f) => ({ ...f, label: FieldDescriptorProto_Label.OPTIONAL }));
  const message = (name: string, subject: string | undefined) => {
    const options = create(MessageOptionsSchema);
    if (subject) setExtension(options, event, create(EventOptionsSchema, { subject }));
    return { name, field: fields, options };
  };
  const file = create(FileDescriptorProtoSchema, {
    name: `${service}/v1/events.proto`,
    package: pkg,
    syntax: "proto3",
    dependency: ["google/protobuf/timestamp.proto"],
    messageType: [
      message("WidgetCreated", `${pkg}.widget.created`),
      message("WidgetUpdated", `${pkg}.widget.updated`),
      message("WidgetDeleted", `${pkg}.widget.deleted`),
      message("Widget", undefined),
    ],
  });
  const registry = createFileRegistry(file, (name) =>
    name === "google/protobuf/timestamp.proto" ? file_google_protobuf_timestamp : undefined,
  );
  const get = (name: string) => registry.getMessage(`${pkg}.${name}`)!;
  return { created: get("WidgetCreated"), updated: get("WidgetUpdated"), deleted: get("WidgetDeleted"), plain: get("Widget") };
}
