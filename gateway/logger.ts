// The logging surface the gateway needs; a pino logger satisfies it as it is.

export interface GatewayLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): GatewayLogger;
}
