// agents.v1.GatewayEventService, the /hubs/events hub: StreamEvents (and its plain-GET form) and
// the client calls pushed to every connection, all fed by one bus subscription per instance (the
// runtime's stream hub) with bounded per-client buffers, so a slow client never holds back the
// others. Each event is decoded and turned into client calls once, and every client gets the same
// frozen messages: one answer per hand-out of the hub (a batch of events, a run of calls).
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { GatewayEventService } from "../../../gen/agents/v1/event_stream_pb.js";
import type { ServerSentEventBatch } from "../../../gen/meshwork/api/v1/sse_pb.js";
import type { EventBus, Logger } from "../../runtime/bus/index.js";
import type { HubConnectionTokens } from "../../runtime/hubs/index.js";
import { createStreamHub, type StreamHub } from "../../runtime/streams/index.js";
import { droppedGatewayEvents, eventTypeFilter, gatewayEventBatchOf, gatewayEventFrame, hubClientCallsOf } from "./gateway-events.js";

/** Events held for one client that reads slowly; beyond it the oldest are dropped. */
export const gatewayEventClientBuffer = 256;

export interface GatewayEventStream {
  impl: ServiceImpl<typeof GatewayEventService>;
  hub: StreamHub;
  stop(): Promise<void>;
}

export function createGatewayEventStream(options: {
  bus: EventBus;
  stream: string;
  logger: Logger;
  /** Admits /hubs/events connections (tokens signed with the agent gateway's hub key). */
  tokens: HubConnectionTokens;
}): GatewayEventStream {
  const hub = createStreamHub({
    bus: options.bus,
    stream: options.stream,
    toEvent: gatewayEventFrame,
    droppedEvent: droppedGatewayEvents,
    clientBufferSize: gatewayEventClientBuffer,
    logger: options.logger,
  });
  const impl: ServiceImpl<typeof GatewayEventService> = {
    connectGatewayEventsHub: (req) => options.tokens.connect(req),

    streamGatewayEvents(req, ctx) {
      let matches: (eventType: string) => boolean = () => false;
      // One answer per hand-out of the hub, shared by every stream with the same filter.
      return answersOf(
        async () => {
          try {
            matches = eventTypeFilter(req.eventTypeFilter);
          } catch (err) {
            throw new ConnectError(`eventTypeFilter: ${(err as Error).message}`, Code.InvalidArgument);
          }
          return hub.open({ signal: ctx.signal });
        },
        (batch) => gatewayEventBatchOf(batch, req.eventTypeFilter, matches),
      );
    },

    pushGatewayEvents(_req, ctx) {
      return answersOf(() => hub.open({ signal: ctx.signal }), hubClientCallsOf);
    },
  };
  return { impl, hub, stop: () => hub.stop() };
}

/**
 * A client's batches from the hub as a stream's answers, each batch mapped to one (undefined: none
 * for it), opened on the first pull. One step per pull rather than an async generator's several:
 * with a thousand connections, every layer a pull goes through is paid a thousand times per hand-out.
 */
function answersOf<T>(
  open: () => Promise<AsyncIterable<ServerSentEventBatch>>,
  answerOf: (batch: ServerSentEventBatch) => T | undefined,
): AsyncIterable<T> {
  let batches: AsyncIterator<ServerSentEventBatch> | undefined;
  const step = (result: IteratorResult<ServerSentEventBatch>): IteratorResult<T> | Promise<IteratorResult<T>> => {
    if (result.done) return { done: true, value: undefined };
    const answer = answerOf(result.value);
    return answer === undefined ? pull() : { done: false, value: answer };
  };
  const pull = (): Promise<IteratorResult<T>> => batches!.next().then(step);
  const iterator: AsyncIterator<T> = {
    next() {
      if (batches) return pull();
      return open().then((opened) => {
        batches = opened[Symbol.asyncIterator]();
        return pull();
      });
    },
    async return() {
      await batches?.return?.();
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}
