// Frames every live stream shares: the opening comment, and freezing, since one frame instance
// goes to every client of an instance and none may change what the others see.
import { create } from "@bufbuild/protobuf";
import { ServerSentEventSchema, type ServerSentEvent } from "../../../gen/meshwork/api/v1/sse_pb.js";

/** Freezes the frame and its data in place; answers it. */
export function frozenFrame(frame: ServerSentEvent): ServerSentEvent {
  if (Object.isFrozen(frame)) return frame;
  if (frame.data) Object.freeze(frame.data);
  return Object.freeze(frame);
}

/** `: connected`, the first frame of every stream: the gateway sends the headers with it. */
export const connectedFrame: ServerSentEvent = frozenFrame(create(ServerSentEventSchema, { comment: "connected" }));
