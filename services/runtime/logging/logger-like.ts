// The logger shape every runtime module accepts. Structural, so a pino logger fits and modules
// need not import pino (or each other) to take one.

export interface LoggerLike {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  child(bindings: Record<string, unknown>): LoggerLike;
}
