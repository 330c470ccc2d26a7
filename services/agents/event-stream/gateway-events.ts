// Which bus messages of the AGENTS stream the events hub shows, under which event type and with
// which payload. Decoded once per message and instance: every client gets the same frame.
import { create, fromBinary, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { type Any, anyPack, BoolValueSchema, StringValueSchema, type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type HubClientCall,
  HubClientCallSchema,
  type HubClientCalls,
  HubClientCallsSchema,
} from "../../../gen/meshwork/api/v1/hubs_pb.js";
import {
  type GatewayEvent,
  type GatewayEventBatch,
  GatewayEventBatchSchema,
  GatewayEventSchema,
  GatewayEventsDroppedSchema,
} from "../../../gen/agents/v1/event_stream_pb.js";
import {
  AgentSpawnedSchema,
  AgentStoppedSchema,
  AgentTurnCompletedSchema,
  ChannelConnectedSchema,
  ChannelDisconnectedSchema,
  GatewayUpdateAvailableSchema,
  ToolApprovalRequestedSchema,
} from "../../../gen/agents/v1/events_pb.js";
import { ServerSentEventSchema, type ServerSentEvent, type ServerSentEventBatch } from "../../../gen/meshwork/api/v1/sse_pb.js";
import { subjectOf, type BusMessage } from "../../runtime/bus/index.js";
import { frozenFrame } from "../../runtime/streams/index.js";

interface Shown<E extends DescMessage> {
  schema: E;
  /** The hub's name for it (the interface's, which is not always the subject's). */
  eventType: string;
  view(event: MessageShape<E>): { sourceId: string; payload: JsonObject };
}

const shown = <E extends DescMessage>(entry: Shown<E>) => entry as unknown as Shown<DescMessage>;

const views: Shown<DescMessage>[] = [
  shown({
    schema: AgentSpawnedSchema,
    eventType: "agent.spawned",
    view: (e) => ({ sourceId: e.agentId, payload: { agentId: e.agentId, provider: e.provider, model: e.model } }),
  }),
  shown({
    schema: AgentTurnCompletedSchema,
    eventType: "agent.turn_complete",
    view: (e) => ({
      sourceId: e.agentId,
      payload: {
        agentId: e.agentId,
        turnIndex: e.turnIndex,
        durationMs: Number(e.durationMs),
        promptTokens: Number(e.promptTokens),
        completionTokens: Number(e.completionTokens),
      },
    }),
  }),
  shown({
    schema: AgentStoppedSchema,
    eventType: "agent.stopped",
    view: (e) => ({ sourceId: e.agentId, payload: { agentId: e.agentId, reason: e.reason } }),
  }),
  shown({
    schema: ChannelConnectedSchema,
    eventType: "channel.connected",
    view: (e) => ({ sourceId: e.channelType, payload: { channelType: e.channelType, isConnected: true } }),
  }),
  shown({
    schema: ChannelDisconnectedSchema,
    eventType: "channel.disconnected",
    view: (e) => ({ sourceId: e.channelType, payload: { channelType: e.channelType, isConnected: false } }),
  }),
  shown({
    schema: GatewayUpdateAvailableSchema,
    eventType: "gateway.update.available",
    view: (e) => ({
      sourceId: e.latestVersion,
      payload: { currentVersion: e.currentVersion, latestVersion: e.latestVersion, packageId: e.packageId },
    }),
  }),
  shown({
    schema: ToolApprovalRequestedSchema,
    eventType: "tool.approval_requested",
    view: (e) => ({
      sourceId: e.agentId,
      payload: {
        agentId: e.agentId,
        approvalId: e.approvalId,
        kind: e.kind,
        tool: e.tool,
        canonical: e.canonical,
        tier: e.tier,
        expiresAt: e.expiresAt ? timestampDate(e.expiresAt).toISOString() : null,
      },
    }),
  }),
];

const bySubject = new Map(views.map((v) => [subjectOf(v.schema), v]));

/** The event a bus message shows as, or undefined for one the hub does not show. */
export function gatewayEventOf(message: BusMessage): GatewayEvent | undefined {
  const entry = bySubject.get(message.subject);
  if (!entry) return undefined;
  const decoded = fromBinary(entry.schema, message.data) as MessageShape<DescMessage> & {
    eventId?: string;
    occurredAt?: Timestamp;
  };
  const { sourceId, payload } = entry.view(decoded);
  return create(GatewayEventSchema, {
    id: decoded.eventId || message.id,
    eventType: entry.eventType,
    sourceId,
    timestamp: decoded.occurredAt,
    payload,
  });
}

// The hub's streams read the event back from the shared frame without unpacking it per client,
// and the client calls pushed for it are made once, with the frame.
const eventOfFrame = new WeakMap<ServerSentEvent, GatewayEvent>();
const callsOfFrame = new WeakMap<ServerSentEvent, readonly HubClientCall[]>();

/** The SSE frame of a bus message (`id:` its stream position, which Last-Event-ID resumes after). */
export function gatewayEventFrame(message: BusMessage): ServerSentEvent | undefined {
  const event = gatewayEventOf(message);
  if (!event) return undefined;
  // Frozen, every level: the one instance every StreamEvents client is handed, which the gateway
  // then renders to JSON once for all of them.
  freezeEvent(event);
  const frame = frozenFrame(
    create(ServerSentEventSchema, { event: event.eventType, id: String(message.seq), data: anyPack(GatewayEventSchema, event) }),
  );
  eventOfFrame.set(frame, event);
  callsOfFrame.set(frame, Object.freeze(clientCallsOf(event)));
  return frame;
}

/** Freezes a message of plain objects (a Struct, a Timestamp: no bytes) and everything in it. */
function freezeEvent(value: object): void {
  for (const inner of Object.values(value)) if (typeof inner === "object" && inner !== null) freezeEvent(inner);
  Object.freeze(value);
}

/**
 * What every /hubs/events connection is called with for an event: `ActivityEvent(event)`, and
 * for a channel event also `ChannelStatusChanged(channelType, isConnected)`.
 */
function clientCallsOf(event: GatewayEvent): HubClientCall[] {
  const calls = [call("ActivityEvent", [anyPack(GatewayEventSchema, event)])];
  if (event.eventType === "channel.connected" || event.eventType === "channel.disconnected") {
    calls.push(
      call("ChannelStatusChanged", [
        anyPack(StringValueSchema, create(StringValueSchema, { value: event.sourceId })),
        anyPack(BoolValueSchema, create(BoolValueSchema, { value: event.eventType === "channel.connected" })),
      ]),
    );
  }
  return calls;
}

const call = (method: string, args: Any[]): HubClientCall => Object.freeze(create(HubClientCallSchema, { method, arguments: args }));

// A hand-out of the instance's fan-out is one batch instance for every client that keeps up, so
// what a stream answers for it is made once per batch (and filter) and frozen: the gateway then
// renders it once for every connection too. Only frozen batches can be shared, so only they are kept.
const eventsOfBatch = new WeakMap<ServerSentEventBatch, Map<string, GatewayEventBatch | null>>();
const callsOfBatch = new WeakMap<ServerSentEventBatch, HubClientCalls | null>();

/**
 * What StreamEvents answers for a batch of the hub: its events that `matches` keeps (`filter` is
 * the filter's text, naming it among the others kept for the batch); undefined when none is kept.
 */
export function gatewayEventBatchOf(
  batch: ServerSentEventBatch,
  filter: string,
  matches: (eventType: string) => boolean,
): GatewayEventBatch | undefined {
  let byFilter = eventsOfBatch.get(batch);
  const known = byFilter?.get(filter);
  if (known !== undefined) return known ?? undefined;
  const events: GatewayEvent[] = [];
  for (const frame of batch.events) {
    const event = eventOfFrame.get(frame);
    if (event && matches(event.eventType)) events.push(event);
  }
  const answer = events.length === 0 ? null : frozenMessage(create(GatewayEventBatchSchema, { events }));
  if (Object.isFrozen(batch)) {
    if (byFilter === undefined) eventsOfBatch.set(batch, (byFilter = new Map()));
    byFilter.set(filter, answer);
  }
  return answer ?? undefined;
}

/** What PushGatewayEvents answers for a batch of the hub: the client calls of its events; undefined for none. */
export function hubClientCallsOf(batch: ServerSentEventBatch): HubClientCalls | undefined {
  const known = callsOfBatch.get(batch);
  if (known !== undefined) return known ?? undefined;
  const calls = batch.events.flatMap((frame) => callsOfFrame.get(frame) ?? []);
  const answer = calls.length === 0 ? null : frozenMessage(create(HubClientCallsSchema, { calls }));
  if (Object.isFrozen(batch)) callsOfBatch.set(batch, answer);
  return answer ?? undefined;
}

/** Freezes a batch message and its list; the elements are frozen already. */
function frozenMessage<T extends GatewayEventBatch | HubClientCalls>(message: T): T {
  Object.freeze("events" in message ? message.events : message.calls);
  return Object.freeze(message);
}

export function droppedGatewayEvents(count: number): ServerSentEvent {
  return frozenFrame(
    create(ServerSentEventSchema, {
      event: "dropped",
      data: anyPack(GatewayEventsDroppedSchema, create(GatewayEventsDroppedSchema, { count })),
    }),
  );
}

/**
 * The filter of StreamEvents(eventTypeFilter): comma-separated types, `prefix.*` for every type
 * under `prefix.`; empty matches everything. Throws on an entry that is empty or malformed.
 */
export function eventTypeFilter(text: string): (eventType: string) => boolean {
  const entries = text
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  if (entries.length === 0) return () => true;
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const entry of entries) {
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$|^\*$/.test(entry)) {
      throw new RangeError(`'${entry.slice(0, 64)}' is not an event type or a 'prefix.*' pattern`);
    }
    if (entry === "*") return () => true;
    if (entry.endsWith(".*")) prefixes.push(entry.slice(0, -1));
    else exact.add(entry);
  }
  return (eventType) => exact.has(eventType) || prefixes.some((p) => eventType.startsWith(p));
}
