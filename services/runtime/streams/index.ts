// Live streams as a library a module configures: one bus subscription per instance fanned out to
// every client with bounded buffers and `dropped` notices, Last-Event-ID replay from the bus, and
// short-lived stream tokens kept (as digests) in PostgreSQL. The module brings the stream, the
// mapper from bus message to frame, its `dropped` frame and its token table.
export { createStreamHub, type OpenStreamOptions, type StreamHub, type StreamHubOptions } from "./stream-hub.js";
export { connectedFrame, frozenFrame } from "./stream-frames.js";
export { openOnFirstPull, resumePosition } from "./open-stream.js";
export {
  createStreamTokens,
  hashStreamToken,
  type IssuedStreamToken,
  type StreamTokenOptions,
  type StreamTokens,
} from "./stream-tokens.js";
export { streamTokenTable, type StreamTokenRow, type StreamTokenTable } from "./stream-token-table.js";
