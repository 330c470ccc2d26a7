// Server interceptor: gives every call a request id (the caller's x-request-id, or a new one),
// runs the handler inside `requestContext` so logs carry it, and echoes it back to the caller.
import { randomUUID } from "node:crypto";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { REQUEST_ID_HEADER, requestContext, type RequestContext } from "../request-context.js";
import { wrapStream } from "./wrap-stream.js";

// A caller-chosen id ends up in every log line, so only a short, printable one is trusted.
const ACCEPTABLE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export const requestContextInterceptor: Interceptor = (next) => async (req) => {
  const offered = req.header.get(REQUEST_ID_HEADER);
  const requestId = offered !== null && ACCEPTABLE_REQUEST_ID.test(offered) ? offered : randomUUID();
  const store: RequestContext = { requestId, values: new Map() };
  try {
    // `next` calls the handler synchronously, so a unary handler starts (and stays) inside `run`.
    const res = await requestContext.run(store, next, req);
    res.header.set(REQUEST_ID_HEADER, requestId);
    if (!res.stream) {
      return res;
    }
    const run = <R>(fn: () => R): R => requestContext.run(store, fn);
    return { ...res, message: wrapStream(res.message, { run, mapError: (error) => stamp(error, requestId) }) };
  } catch (error) {
    throw stamp(error, requestId);
  }
};

/** Error metadata travels as response headers or trailers, so failed calls echo the id too. */
function stamp(error: unknown, requestId: string): unknown {
  if (error instanceof ConnectError) {
    error.metadata.set(REQUEST_ID_HEADER, requestId);
  }
  return error;
}

/**
 * Client interceptor: forwards the current request id on outgoing calls, so one id follows a
 * request from the gateway through every service it touches.
 */
export const forwardRequestIdInterceptor: Interceptor = (next) => async (req) => {
  const requestId = requestContext.getStore()?.requestId;
  if (requestId !== undefined && !req.header.has(REQUEST_ID_HEADER)) {
    req.header.set(REQUEST_ID_HEADER, requestId);
  }
  return await next(req);
};
