// The logging surface the gateway needs; a pino logger satisfies it as it is.

export interface GatewayLogger {
  /** Only the access log writes below info; a logger without the level drops those lines. */
  trace?(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): GatewayLogger;
}

/**
 * The level of the access log: a front's line per answered request, and per request refused
 * before routing. Server errors (5xx) are not access lines: they log as errors whatever this says.
 */
export type AccessLogLevel = "info" | "debug" | "trace" | "silent";

export const DEFAULT_ACCESS_LOG_LEVEL: AccessLogLevel = "info";

export type LogLine = (obj: object, msg: string) => void;

/** How an access line is written at `level`; undefined for silent, so callers skip building it. */
export function accessLogWriter(logger: GatewayLogger, level: AccessLogLevel = DEFAULT_ACCESS_LOG_LEVEL): LogLine | undefined {
  switch (level) {
    case "info":
      return (obj, msg) => logger.info(obj, msg);
    case "debug":
      return (obj, msg) => logger.debug?.(obj, msg);
    case "trace":
      return (obj, msg) => logger.trace?.(obj, msg);
    case "silent":
      return undefined;
  }
}
