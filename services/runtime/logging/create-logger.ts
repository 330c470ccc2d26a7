// Structured JSON logging (pino). Every line written while a request is being handled carries
// its request id; values under credential-like keys never reach the output.
import { pino, type DestinationStream, type Logger } from "pino";
import { getRequestId } from "../host/request-context.js";
import { safeError } from "./safe-error.js";

export type { Logger };

/** Paths pino blanks out wherever they appear in a log object. */
export const redactedPaths = [
  "password",
  "*.password",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
  // The configured key list (config.auth.apiKeys), whole: names and roles are not worth a leak.
  "apiKeys",
  "*.apiKeys",
  "*.*.apiKeys",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  '["x-api-key"]',
  '*["x-api-key"]',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  "databaseUrl",
  "*.databaseUrl",
];

export interface LoggerOptions {
  level: string;
  name?: string;
  /** Where lines go; stdout by default. Tests pass a stream to read them back. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      name: options.name ?? "meshwork",
      redact: { paths: redactedPaths, censor: "[redacted]" },
      // A failed statement must not log its bound values, whichever module logs the error.
      serializers: { err: safeError, error: safeError },
      mixin() {
        const requestId = getRequestId();
        return requestId ? { requestId } : {};
      },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}
