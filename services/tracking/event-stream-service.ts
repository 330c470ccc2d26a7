// tracking.v1.EventStreamService handlers: stream tokens, and the live event stream behind
// GET /api/events. The token is the stream's credential; events come from this instance's hub.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { EventStreamService } from "../../gen/tracking/v1/event_stream_pb.js";
import { createStreamHub, type StreamHub } from "./events/stream-hub.js";
import { createStreamTokens, type StreamTokens } from "./events/stream-tokens.js";
import { trackingStream } from "./events/subjects.js";
import type { TrackingDeps } from "./deps.js";

// Ids are bus sequences. Anything else (a stale or foreign id) is ignored rather than refused: a
// refused EventSource stops reconnecting for good.
const EVENT_ID = /^\d{1,15}$/;

export interface EventStream {
  impl: ServiceImpl<typeof EventStreamService>;
  hub: StreamHub;
  stop(): Promise<void>;
}

export function createEventStream(deps: TrackingDeps): EventStream {
  const hub = createStreamHub({
    bus: deps.bus,
    stream: trackingStream.name,
    clientBufferSize: deps.settings.events.clientBufferSize,
    logger: deps.logger,
  });
  const tokens = createStreamTokens({ db: deps.db, ttlMinutes: deps.settings.sseToken.ttlMinutes });
  return { impl: eventStreamService(hub, tokens), hub, stop: () => hub.stop() };
}

function eventStreamService(hub: StreamHub, tokens: StreamTokens): ServiceImpl<typeof EventStreamService> {
  return {
    async createStreamToken() {
      const { token, expiresAt } = await tokens.issue();
      return { token, expiresAt: timestampFromDate(expiresAt) };
    },

    streamEvents(req, ctx) {
      // Not a generator delegating to the hub: once open, each pull goes straight to the hub's
      // stream (one layer less per message for every client).
      return openedLater(async () => {
        if (req.token === "") {
          throw new ConnectError(
            "a stream token is required: POST /api/events/token, then GET /api/events?token=<token>",
            Code.Unauthenticated,
          );
        }
        if (!(await tokens.isValid(req.token))) {
          throw new ConnectError("the stream token is unknown or expired", Code.Unauthenticated);
        }
        const lastEventId = ctx.requestHeader.get("last-event-id") ?? req.lastEventId ?? "";
        const resumeAfter = EVENT_ID.test(lastEventId) ? Number(lastEventId) : undefined;
        return hub.open({ resumeAfter, signal: ctx.signal });
      });
    },
  };
}

/** A stream opened on the first pull (so its checks fail the call as a handler's would); after that, the opened stream's own iterator. */
function openedLater<T>(open: () => Promise<AsyncIterable<T>>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      let inner: AsyncIterator<T> | undefined;
      let opening: Promise<AsyncIterator<T>> | undefined;
      const opened = (): Promise<AsyncIterator<T>> => (opening ??= open().then((iterable) => (inner = iterable[Symbol.asyncIterator]())));
      return {
        next() {
          return inner ? inner.next() : opened().then((it) => it.next());
        },
        async return(value?: unknown) {
          const it = inner ?? (opening ? await opening.catch(() => undefined) : undefined);
          return (await it?.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}
