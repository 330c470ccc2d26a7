// Which tracking bus events the live event stream shows, under which name and with which data:
// the mapper and the `dropped` frame tracking gives the runtime's stream hub. Decoding happens
// here once per event and instance; every client receives the same frame.
import { create, createRegistry, fromBinary, type DescField, type DescMessage, type Message, type MessageShape } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { ServerSentEventSchema, type ServerSentEvent } from "../../../gen/meshwork/api/v1/sse_pb.js";
import { GeofenceBreachSchema } from "../../../gen/tracking/v1/breach_pb.js";
import { DataChangedSchema, DroppedSchema } from "../../../gen/tracking/v1/event_stream_pb.js";
import {
  file_tracking_v1_events,
  GeofenceBreachDetectedSchema,
  ObservationRecordedSchema,
  SpeedAlertRaisedSchema,
} from "../../../gen/tracking/v1/events_pb.js";
import { ObservationSchema } from "../../../gen/tracking/v1/observation_pb.js";
import { SpeedAlertSchema } from "../../../gen/tracking/v1/speed_alert_pb.js";
import type { BusMessage } from "../../runtime/bus/index.js";
import { frozenFrame } from "../../runtime/streams/index.js";
import { subjects } from "./subjects.js";

/** The event names of the stream, as clients listen for them. */
export const streamEventNames = {
  observation: "observation",
  speedAlert: "speed_alert",
  geofenceBreach: "geofence_breach",
  dataChanged: "data_changed",
  dropped: "dropped",
} as const;

/** Entities whose created/updated/deleted events become `data_changed` (subject token). */
const CHANGED_ENTITIES = new Set(["asset", "device", "geofence", "integration_feed"]);
const CHANGE_ACTIONS = new Set(["created", "updated", "deleted"]);

type Mapper = (data: Uint8Array, id: string) => ServerSentEvent;

function resourceEvent<E extends DescMessage, R extends DescMessage>(
  name: string,
  eventSchema: E,
  resourceSchema: R,
  pick: (event: MessageShape<E>) => MessageShape<R> | undefined,
): Mapper {
  return (data, id) => {
    const resource = pick(fromBinary(eventSchema, data)) ?? create(resourceSchema);
    return frozenFrame(create(ServerSentEventSchema, { event: name, id, data: anyPack(resourceSchema, resource) }));
  };
}

const resourceEvents = new Map<string, Mapper>([
  [
    subjects.observationRecorded,
    resourceEvent(streamEventNames.observation, ObservationRecordedSchema, ObservationSchema, (e) => e.observation),
  ],
  [subjects.speedAlertRaised, resourceEvent(streamEventNames.speedAlert, SpeedAlertRaisedSchema, SpeedAlertSchema, (e) => e.speedAlert)],
  [
    subjects.breachDetected,
    resourceEvent(streamEventNames.geofenceBreach, GeofenceBreachDetectedSchema, GeofenceBreachSchema, (e) => e.breach),
  ],
]);

// The event messages of events.proto, found by name: tracking.v1.<entity>.<action> is published
// with the message <Entity><Action> (integration_feed.created: IntegrationFeedCreated), whose
// payload is its one resource field. Entities added later are picked up by that rule.
const eventMessages = createRegistry(file_tracking_v1_events);
const changeMappers = new Map<string, Mapper | undefined>();

function changeMapper(subject: string): Mapper | undefined {
  if (changeMappers.has(subject)) return changeMappers.get(subject);
  let mapper: Mapper | undefined;
  const [, , entity, action, ...rest] = subject.split(".");
  if (entity && action && rest.length === 0 && CHANGED_ENTITIES.has(entity) && CHANGE_ACTIONS.has(action)) {
    const schema = eventMessages.getMessage(`tracking.v1.${pascal(entity)}${pascal(action)}`);
    const payload = schema && payloadFieldOf(schema);
    mapper = (data, id) => {
      let resourceId = "";
      if (schema && payload) {
        const resource = (fromBinary(schema, data) as unknown as Record<string, Message | undefined>)[payload.localName];
        const value = (resource as { id?: unknown } | undefined)?.id;
        if (typeof value === "string") resourceId = value;
      }
      return frozenFrame(
        create(ServerSentEventSchema, {
          event: streamEventNames.dataChanged,
          id,
          data: anyPack(DataChangedSchema, create(DataChangedSchema, { entity, action, id: resourceId })),
        }),
      );
    };
  }
  changeMappers.set(subject, mapper);
  return mapper;
}

/** The resource a change event carries: its one message field that is not a timestamp. */
function payloadFieldOf(schema: DescMessage): DescField | undefined {
  return schema.fields.find((f) => f.fieldKind === "message" && f.message.typeName !== "google.protobuf.Timestamp");
}

function pascal(token: string): string {
  return token
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
}

/**
 * The stream frame for a bus message, with the bus sequence as its id, or undefined for events
 * the stream does not show (acknowledgements, for one).
 */
export function toStreamEvent(message: BusMessage): ServerSentEvent | undefined {
  const mapper = resourceEvents.get(message.subject) ?? changeMapper(message.subject);
  return mapper?.(message.data, String(message.seq));
}

/** `dropped`: events a client did not receive. No id: it marks a gap, not a position. */
export function droppedEvent(count: number): ServerSentEvent {
  return frozenFrame(
    create(ServerSentEventSchema, {
      event: streamEventNames.dropped,
      data: anyPack(DroppedSchema, create(DroppedSchema, { count })),
    }),
  );
}
