// The events hub's streams over the bus (the in-process one, or NATS JetStream when NATS_URL is
// set): which messages show, as what, to which filter; and the plain-GET form's SSE frames. The
// hub protocol and the REST front are tested where they are bound.
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack, BoolValueSchema, StringValueSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import test from "ava";
import { randomBytes, randomUUID } from "node:crypto";
import {
  GatewayEventSchema,
  PushGatewayEventsRequestSchema as PushRequest,
  StreamGatewayEventsRequestSchema as StreamRequest,
  type GatewayEvent,
  type GatewayEventBatch,
} from "../../../gen/agents/v1/event_stream_pb.js";
import {
  AgentSpawnedSchema,
  AgentStoppedSchema,
  AgentTurnCompletedSchema,
  ChannelConnectedSchema,
  ChannelDisconnectedSchema,
  file_agents_v1_events,
  GatewayUpdateAvailableSchema,
} from "../../../gen/agents/v1/events_pb.js";
import { type HubClientCalls, HubConnectRequestSchema } from "../../../gen/meshwork/api/v1/hubs_pb.js";
import { createHubConnectionTokens } from "../../runtime/hubs/index.js";
import { openBus, subjectOf, type BusMessage, type EventBus } from "../../runtime/bus/index.js";
import { createLogger } from "../../runtime/logging/index.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { until } from "../../../test/support/until.js";
import { createGatewayEventStream, type GatewayEventStream } from "./gateway-event-service.js";
import { eventTypeFilter, gatewayEventOf } from "./gateway-events.js";

const logger = createLogger({ level: "silent" });
const stream = { name: "AGENTS", subjects: [`${file_agents_v1_events.proto.package}.>`] };
let bus: EventBus;
let events: GatewayEventStream;

test.before(async () => {
  bus = await openBus({ url: realInfra().natsUrl, logger, name: "gateway-event-service.test" });
  await bus.ensureStreams([stream]);
  const key = randomBytes(32);
  events = createGatewayEventStream({ bus, stream: stream.name, logger, tokens: createHubConnectionTokens({ keys: () => [key] }) });
});

test.after.always(async () => {
  await events?.stop();
  await bus?.close();
});

const occurredAt = new Date("2026-11-25T03:00:00.000Z");

async function publish<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Promise<string> {
  const eventId = randomUUID();
  const message = create(schema, { ...init, eventId, occurredAt: timestampFromDate(occurredAt) } as MessageInitShape<D>);
  await bus.publish(subjectOf(schema), toBinary(schema, message), { id: eventId });
  return eventId;
}

function busMessage<D extends DescMessage>(schema: D, init: MessageInitShape<D>): BusMessage {
  const data = toBinary(schema, create(schema, { ...init, occurredAt: timestampFromDate(occurredAt) } as MessageInitShape<D>));
  return {
    subject: subjectOf(schema),
    id: "bus-id",
    data,
    headers: {},
    seq: 7,
    stream: "AGENTS",
    timestamp: occurredAt,
    redelivered: false,
  };
}

const plain = (event: GatewayEvent | undefined) =>
  event && { id: event.id, eventType: event.eventType, sourceId: event.sourceId, payload: event.payload };

test("each AGENTS event shows under the interface's type, with its source and payload", (t) => {
  const agentId = randomUUID();
  t.deepEqual(plain(gatewayEventOf(busMessage(AgentSpawnedSchema, { eventId: "e1", agentId, provider: "fake", model: "m1" }))), {
    id: "e1",
    eventType: "agent.spawned",
    sourceId: agentId,
    payload: { agentId, provider: "fake", model: "m1" },
  });
  t.deepEqual(
    plain(
      gatewayEventOf(
        busMessage(AgentTurnCompletedSchema, { agentId, turnIndex: 2, durationMs: 1500n, promptTokens: 12n, completionTokens: 30n }),
      ),
    ),
    {
      id: "bus-id",
      eventType: "agent.turn_complete",
      sourceId: agentId,
      payload: { agentId, turnIndex: 2, durationMs: 1500, promptTokens: 12, completionTokens: 30 },
    },
  );
  t.deepEqual(plain(gatewayEventOf(busMessage(AgentStoppedSchema, { agentId, reason: "idle" })))?.payload, { agentId, reason: "idle" });
  t.deepEqual(plain(gatewayEventOf(busMessage(ChannelConnectedSchema, { channelType: "web" }))), {
    id: "bus-id",
    eventType: "channel.connected",
    sourceId: "web",
    payload: { channelType: "web", isConnected: true },
  });
  t.deepEqual(plain(gatewayEventOf(busMessage(ChannelDisconnectedSchema, { channelType: "web" })))?.payload, {
    channelType: "web",
    isConnected: false,
  });
  const update = gatewayEventOf(
    busMessage(GatewayUpdateAvailableSchema, { currentVersion: "1.0.0", latestVersion: "1.1.0", packageId: "app-daemon" }),
  );
  t.is(update?.eventType, "gateway.update.available");
  t.deepEqual(update?.payload, { currentVersion: "1.0.0", latestVersion: "1.1.0", packageId: "app-daemon" });
  t.is(update?.timestamp?.seconds, BigInt(occurredAt.getTime() / 1000));
  t.is(gatewayEventOf({ ...busMessage(ChannelConnectedSchema, {}), subject: "agents.v1.something.else" }), undefined);
});

test("filters: exact types, comma-separated, `prefix.*`, empty for all; a malformed entry is refused", (t) => {
  const all = eventTypeFilter("");
  t.true(all("agent.spawned") && all("channel.connected"));
  const agents = eventTypeFilter("agent.*");
  t.true(agents("agent.spawned"));
  t.true(agents("agent.turn_complete"));
  t.false(agents("channel.connected"));
  t.false(agents("agentx.spawned"));
  const two = eventTypeFilter(" channel.connected , agent.stopped ");
  t.true(two("channel.connected") && two("agent.stopped"));
  t.false(two("channel.disconnected"));
  t.false(two("agent.spawned"));
  t.throws(() => eventTypeFilter("Agent Spawned"), { message: /'Agent Spawned' is not an event type/ });
  t.throws(() => eventTypeFilter("agent.*.x"));
});

function context(): { ctx: HandlerContext; abort: () => void } {
  const controller = new AbortController();
  const ctx = { signal: controller.signal, requestHeader: new Headers() } as unknown as HandlerContext;
  return { ctx, abort: () => controller.abort() };
}

test("StreamEvents yields the events its filter matches, in order, from when it opened", async (t) => {
  const agentId = randomUUID();
  const { ctx, abort } = context();
  const received: GatewayEvent[] = [];
  const reading = (async () => {
    const stream = events.impl.streamGatewayEvents!(create(StreamRequest, { eventTypeFilter: "agent.*" }), ctx);
    for await (const batch of stream as AsyncIterable<GatewayEventBatch>) {
      t.true(batch.events.length > 0, "a batch holds at least one event");
      for (const event of batch.events) {
        if (event.sourceId === agentId || event.payload?.channelType === agentId) received.push(event);
      }
      if (received.length >= 2) break;
    }
  })();
  await until(() => events.hub.clientCount > 0, "the stream to open");
  const spawned = await publish(AgentSpawnedSchema, { agentId, provider: "fake", model: "m1" });
  await publish(ChannelConnectedSchema, { channelType: agentId });
  const stopped = await publish(AgentStoppedSchema, { agentId, reason: "requested" });
  await reading;
  abort();
  t.deepEqual(
    received.map((e) => [e.id, e.eventType]),
    [
      [spawned, "agent.spawned"],
      [stopped, "agent.stopped"],
    ],
  );
});

test("streams with one filter are handed one frozen batch per hand-out, and the push streams one frozen run of calls", async (t) => {
  const agentId = randomUUID();
  const opened = [context(), context(), context()];
  const firstWith = async <T>(answers: AsyncIterable<T>, holds: (answer: T) => boolean): Promise<T> => {
    for await (const answer of answers) if (holds(answer)) return answer;
    throw new Error("the stream ended");
  };
  const holdsAgent = (batch: GatewayEventBatch) => batch.events.some((e) => e.sourceId === agentId);
  const before = events.hub.clientCount;
  const reading = Promise.all([
    firstWith(
      events.impl.streamGatewayEvents!(
        create(StreamRequest, { eventTypeFilter: "agent.*" }),
        opened[0]!.ctx,
      ) as AsyncIterable<GatewayEventBatch>,
      holdsAgent,
    ),
    firstWith(
      events.impl.streamGatewayEvents!(
        create(StreamRequest, { eventTypeFilter: "agent.*" }),
        opened[1]!.ctx,
      ) as AsyncIterable<GatewayEventBatch>,
      holdsAgent,
    ),
    firstWith(events.impl.pushGatewayEvents!(create(PushRequest, {}), opened[2]!.ctx) as AsyncIterable<HubClientCalls>, (run) =>
      run.calls.some((c) => anyUnpack(c.arguments[0]!, GatewayEventSchema)?.sourceId === agentId),
    ),
  ]);
  await until(() => events.hub.clientCount >= before + 3, "the streams to open");
  await publish(AgentSpawnedSchema, { agentId, provider: "fake", model: "m1" });
  const [first, second, calls] = await reading;
  for (const o of opened) o.abort();
  t.is(first, second, "the same instance for both streams");
  t.true(Object.isFrozen(first) && Object.isFrozen(first.events));
  const event = first.events.find((e) => e.sourceId === agentId)!;
  t.true(Object.isFrozen(event) && Object.isFrozen(event.payload) && Object.isFrozen(event.timestamp));
  t.true(Object.isFrozen(calls) && Object.isFrozen(calls.calls));
  t.is(calls.calls.find((c) => anyUnpack(c.arguments[0]!, GatewayEventSchema)?.sourceId === agentId)?.method, "ActivityEvent");
});

test("StreamEvents refuses a malformed filter before it opens", async (t) => {
  const { ctx } = context();
  const stream = events.impl.streamGatewayEvents!(create(StreamRequest, { eventTypeFilter: "no such;type" }), ctx);
  const err = await t.throwsAsync(async () => {
    for await (const _ of stream) break;
  });
  t.true(err instanceof ConnectError);
  t.is((err as ConnectError).code, Code.InvalidArgument);
  t.regex(err!.message, /eventTypeFilter/);
});

test("every connection is pushed ActivityEvent(event), and ChannelStatusChanged(channelType, isConnected) for channel events", async (t) => {
  const channel = `chan-${randomUUID()}`;
  const { ctx, abort } = context();
  const calls: { method: string; args: unknown[] }[] = [];
  const reading = (async () => {
    for await (const run of events.impl.pushGatewayEvents!(create(PushRequest, {}), ctx) as AsyncIterable<HubClientCalls>) {
      for (const call of run.calls) {
        const args = call.arguments.map((a) =>
          a.typeUrl.endsWith("GatewayEvent")
            ? anyUnpack(a, GatewayEventSchema)?.sourceId
            : a.typeUrl.endsWith("StringValue")
              ? anyUnpack(a, StringValueSchema)?.value
              : anyUnpack(a, BoolValueSchema)?.value,
        );
        if (args[0] === channel) calls.push({ method: call.method, args });
      }
      if (calls.length >= 4) break;
    }
  })();
  await until(() => events.hub.clientCount > 0, "the push stream to open");
  await publish(ChannelConnectedSchema, { channelType: channel });
  await publish(ChannelDisconnectedSchema, { channelType: channel });
  await reading;
  abort();
  t.deepEqual(calls, [
    { method: "ActivityEvent", args: [channel] },
    { method: "ChannelStatusChanged", args: [channel, true] },
    { method: "ActivityEvent", args: [channel] },
    { method: "ChannelStatusChanged", args: [channel, false] },
  ]);
});

test("the connect rpc issues a token any instance with the key admits", async (t) => {
  const issued = await events.impl.connectGatewayEventsHub!(create(HubConnectRequestSchema, { hub: "/hubs/events" }), context().ctx);
  t.truthy(issued.connectionToken);
  const admitted = await events.impl.connectGatewayEventsHub!(
    create(HubConnectRequestSchema, { hub: "/hubs/events", connectionToken: issued.connectionToken }),
    context().ctx,
  );
  t.is(admitted.connectionId, issued.connectionId);
});
