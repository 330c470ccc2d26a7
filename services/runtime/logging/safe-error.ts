// The `err` serializer of every logger: a database error becomes its description (SQL state,
// statement kind and table, constraint), never the statement with its values or the row PostgreSQL
// echoes back; any other error keeps pino's usual shape minus the properties that carry SQL or
// bound values, wherever a library put them.
import { stdSerializers } from "pino";
import { describeDbError } from "../database/describe-db-error.js";

// Properties drivers and query builders attach to their errors that hold statements or values.
const UNSAFE_KEYS = ["query", "parameters", "params", "bindings", "sql", "detail", "where", "internalQuery", "values"];

function stackFrames(stack: unknown): string | undefined {
  if (typeof stack !== "string") return undefined;
  // The stack's first lines repeat the message; only the frames are safe to keep.
  const frames = stack.split("\n").filter((line) => line.startsWith("    at "));
  return frames.length ? frames.join("\n") : undefined;
}

/** A loggable form of any thrown value that holds no SQL text or bound value. */
export function safeError(error: unknown, depth = 0): unknown {
  const db = describeDbError(error);
  if (db) {
    const frames = stackFrames((error as { stack?: unknown }).stack);
    return { ...db, ...(frames ? { stack: frames } : {}) };
  }
  if (!(error instanceof Error)) return error;
  const out = stdSerializers.err(error) as unknown as Record<string, unknown>;
  for (const key of UNSAFE_KEYS) delete out[key];
  // The cause chain is re-serialized here so a driver error wrapped by a handler is caught too.
  if (error.cause !== undefined && depth < 4) out.cause = safeError(error.cause, depth + 1);
  if (describesDbCause(error, depth)) {
    // pino folds the causes' messages into the stack and message: rebuild both from the top only.
    out.message = error.message;
    out.stack = stackFrames(error.stack);
  }
  return out;
}

function describesDbCause(error: Error, depth: number): boolean {
  let cause: unknown = error.cause;
  for (let i = depth; i < 4 && cause !== undefined; i++) {
    if (describeDbError(cause)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
