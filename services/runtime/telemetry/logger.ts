// The logger shape telemetry takes: the runtime-wide one.
export type { LoggerLike as Logger } from "../logging/logger-like.js";
