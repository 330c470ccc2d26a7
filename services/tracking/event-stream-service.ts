// tracking.v1.EventStreamService handlers: stream tokens, and the live event stream behind
// GET /api/events. The token is the stream's credential; events come from this instance's hub.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { EventStreamService } from "../../gen/tracking/v1/event_stream_pb.js";
import {
  createStreamHub,
  createStreamTokens,
  openOnFirstPull,
  resumePosition,
  streamTokenTable,
  type StreamHub,
  type StreamTokens,
} from "../runtime/streams/index.js";
import { droppedEvent, toStreamEvent } from "./events/stream-mapping.js";
import { trackingStream } from "./events/subjects.js";
import type { TrackingDeps } from "./deps.js";

/** The table migration tracking-0006-stream-tokens created; its name and rows stay as they were. */
export const trackingStreamTokenTable = streamTokenTable("tracking_stream_token");

export interface EventStream {
  impl: ServiceImpl<typeof EventStreamService>;
  hub: StreamHub;
  stop(): Promise<void>;
}

export function createEventStream(deps: TrackingDeps): EventStream {
  const hub = createStreamHub({
    bus: deps.bus,
    stream: trackingStream.name,
    toEvent: toStreamEvent,
    droppedEvent,
    clientBufferSize: deps.settings.events.clientBufferSize,
    logger: deps.logger,
  });
  const tokens = createStreamTokens({ db: deps.db, table: trackingStreamTokenTable, ttlMinutes: deps.settings.sseToken.ttlMinutes });
  return { impl: eventStreamService(hub, tokens), hub, stop: () => hub.stop() };
}

function eventStreamService(hub: StreamHub, tokens: StreamTokens): ServiceImpl<typeof EventStreamService> {
  return {
    async createStreamToken() {
      const { token, expiresAt } = await tokens.issue();
      return { token, expiresAt: timestampFromDate(expiresAt) };
    },

    streamEvents(req, ctx) {
      return openOnFirstPull(async () => {
        if (req.token === "") {
          throw new ConnectError(
            "a stream token is required: POST /api/events/token, then GET /api/events?token=<token>",
            Code.Unauthenticated,
          );
        }
        if (!(await tokens.isValid(req.token))) {
          throw new ConnectError("the stream token is unknown or expired", Code.Unauthenticated);
        }
        const resumeAfter = resumePosition(ctx.requestHeader.get("last-event-id") ?? req.lastEventId ?? "");
        return hub.open({ resumeAfter, signal: ctx.signal });
      });
    },
  };
}
