export { createLogger, redactedPaths } from "./create-logger.js";
export type { Logger, LoggerOptions } from "./create-logger.js";
export type { LoggerLike } from "./logger-like.js";
export { safeError } from "./safe-error.js";
