// Server interceptor: only ConnectErrors cross the service boundary. Anything else a handler
// throws is logged here and answered as a bare "internal error", so internals never leak.
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import { wrapStream } from "./wrap-stream.js";

export function errorInterceptor(logger: Logger): Interceptor {
  const toPublic = (req: { service: DescService; method: DescMethod; signal: AbortSignal }, error: unknown): ConnectError => {
    if (error instanceof ConnectError) {
      return error;
    }
    const procedure = `${req.service.typeName}/${req.method.name}`;
    if (req.signal.aborted) {
      // The caller went away or its deadline passed: whatever the handler tripped over next is
      // a consequence, not a fault. The signal's reason says which (Canceled or DeadlineExceeded).
      logger.debug({ rpc: procedure, err: error }, "handler failed after the call was aborted");
      return ConnectError.from(req.signal.reason, Code.Canceled);
    }
    logger.error({ rpc: procedure, err: error }, "handler failed");
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
