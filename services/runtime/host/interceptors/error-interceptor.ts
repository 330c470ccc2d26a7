// Server interceptor: only ConnectErrors cross the service boundary. Anything else a handler
// throws is logged here and answered as a bare "internal error", so internals never leak. A
// database that cannot be reached is an outage, not a bug: Unavailable with a Retry-After, so
// clients and load balancers back off instead of reporting a fault.
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { describeDbError } from "../../database/describe-db-error.js";
import { safeError } from "../../logging/safe-error.js";
import type { Logger } from "../logger.js";
import { wrapStream } from "./wrap-stream.js";

export const DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export interface ErrorInterceptorOptions {
  /** Retry-After of an Unavailable answer caused by the database; default 5 s. */
  readonly unavailableRetryAfterSeconds?: number;
}

export function errorInterceptor(logger: Logger, options: ErrorInterceptorOptions = {}): Interceptor {
  const retryAfter = String(options.unavailableRetryAfterSeconds ?? DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS);
  const toPublic = (req: { service: DescService; method: DescMethod; signal: AbortSignal }, error: unknown): ConnectError => {
    if (error instanceof ConnectError) {
      return error;
    }
    const procedure = `${req.service.typeName}/${req.method.name}`;
    if (req.signal.aborted) {
      // The caller went away or its deadline passed: whatever the handler tripped over next is
      // a consequence, not a fault. The signal's reason says which (Canceled or DeadlineExceeded).
      logger.debug({ rpc: procedure, err: safeError(error) }, "handler failed after the call was aborted");
      return ConnectError.from(req.signal.reason, Code.Canceled);
    }
    const db = describeDbError(error);
    if (db?.unavailable) {
      logger.warn({ rpc: procedure, err: safeError(error) }, "database unavailable");
      return new ConnectError("the database is unavailable; try again later", Code.Unavailable, { "retry-after": retryAfter });
    }
    const refusal = db && clientRefusal(db.sqlState);
    if (refusal) {
      // A value the database refuses that no check before it caught: the client's input, but
      // also a missing check, so it is logged for someone to add one.
      logger.warn({ rpc: procedure, err: safeError(error) }, "database refused a value");
      return refusal;
    }
    logger.error({ rpc: procedure, err: safeError(error) }, "handler failed");
    return new ConnectError("internal error", Code.Internal);
  };
  return (next) => async (req) => {
    try {
      const res = await next(req);
      if (!res.stream) {
        return res;
      }
      return { ...res, message: wrapStream(res.message, { mapError: (error) => toPublic(req, error) }) };
    } catch (error) {
      throw toPublic(req, error);
    }
  };
}

/** SQL states that mean the request held a value the database cannot take, not a server fault. */
function clientRefusal(sqlState: string | undefined): ConnectError | undefined {
  if (sqlState === undefined) return undefined;
  // Class 22, data exception: out of range, invalid text representation, bad encoding.
  if (sqlState.startsWith("22"))
    return new ConnectError(`a value in the request cannot be stored (SQLSTATE ${sqlState})`, Code.InvalidArgument);
  // 08P01: the server refused the message itself, which a NUL byte in a bound value causes.
  if (sqlState === "08P01") return new ConnectError("a value in the request cannot be stored", Code.InvalidArgument);
  if (sqlState === "23505") return new ConnectError("the request conflicts with an existing record", Code.AlreadyExists);
  return undefined;
}
