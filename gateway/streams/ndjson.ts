// Newline-delimited JSON: one message per line; a late failure is one last {"error": ...} line.
import type { StreamFramer } from "./framer.js";

export const ndjsonFramer: StreamFramer = {
  mediaType: "application/x-ndjson",
  contentType: "application/x-ndjson",
  eagerHeaders: false,
  message: (json) => `${JSON.stringify(json)}\n`,
  error: (_status, document) => `${JSON.stringify({ error: document })}\n`,
};
