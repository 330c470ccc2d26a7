// The logger shape the host takes: the runtime-wide one.
export type { LoggerLike as Logger } from "../logging/logger-like.js";
