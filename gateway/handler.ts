// The request pipeline of a REST front: match a route, read and map the request, call the
// service through a connect-es Transport, map the answer (or the failure) back to HTTP.
import type { IncomingMessage, ServerResponse } from "node:http";
import { setMaxListeners } from "node:events";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { DescMethodServerStreaming, DescMethodUnary, DescService, JsonValue, Message } from "@bufbuild/protobuf";
import { ConnectError, type Transport } from "@connectrpc/connect";
import { fromConnectError } from "./errors/from-connect-error.js";
import { badRequest, HttpError } from "./errors/http-error.js";
import { renderError } from "./errors/render-error.js";
import { clientIpResolver, type ForwardedPolicy } from "./http/client-ip.js";
import { isJsonContentType } from "./http/content-type.js";
import { createCors, type CorsPolicy } from "./http/cors.js";
import { serviceHeaders, type HeaderForwarder } from "./http/forward-headers.js";
import { announcesBody, discardRest, readBody } from "./http/read-body.js";
import { requestIdOf } from "./http/request-id.js";
import { CALLER_HEADER, clientResponseHeaders, withServiceHeaders } from "./http/response-headers.js";
import { type AccessLogLevel, accessLogWriter, type GatewayLogger } from "./logger.js";
import { selectFramer, type StreamFramer } from "./streams/framer.js";
import { ndjsonFramer } from "./streams/ndjson.js";
import { createSseFramer, SSE_HEADERS, type SseFramer } from "./streams/sse-framer.js";
import { createKeepAlive, type KeepAliveEntry } from "./streams/sse-keep-alive.js";
import { frontStyleOf, type FrontStyle, type ServiceStyle } from "./style.js";
import { buildRequest, rawBodyJson } from "./transcoder/request-mapping.js";
import { compileRouteTable, routeSourcesOf, type CompiledRoute } from "./transcoder/route-table.js";
import { typeRegistryOf } from "./transcoder/type-registry.js";

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
export const DEFAULT_SSE_KEEP_ALIVE_SECONDS = 15;
export const DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export interface GatewayHandlerOptions {
  /** The services whose google.api.http rules this handler serves. */
  readonly services: readonly DescService[];
  /** Any connect-es transport: in-process router, Connect, gRPC or gRPC-web. */
  readonly transport: Transport;
  readonly logger: GatewayLogger;
  /** Level of the line per answered request; default info. 5xx log as errors whatever it is. */
  readonly accessLogLevel?: AccessLogLevel;
  /** Largest accepted request body; default 1 MiB. */
  readonly bodyLimitBytes?: number;
  /** Style of errors raised before a method is known (404, 405). Default: the services' own. */
  readonly defaultStyle?: FrontStyle;
  /** Deadline of every unary call, in milliseconds. Streams have none. Default: none. */
  readonly timeoutMs?: number;
  /** Adds headers for the service beyond x-request-id, trace context and credentials. */
  readonly forwardHeaders?: HeaderForwarder;
  /** Extra stream framers chosen by the Accept header; NDJSON stays the default. */
  readonly streamFramers?: readonly StreamFramer[];
  /** Interval of the keep-alive comment on open server-sent event streams; default 15 s. */
  readonly sseKeepAliveSeconds?: number;
  /** Retry-After of a 503 whose service named none (an unreachable service, say); default 5 s. */
  readonly unavailableRetryAfterSeconds?: number;
  /** Cross-origin access: preflights answered here, allowed origins told so. Unset: no CORS headers. */
  readonly cors?: CorsPolicy;
  /** Whose X-Forwarded-For names the client (x-meshwork-client-address). Unset: the TCP peer. */
  readonly clientAddress?: ForwardedPolicy;
  /**
   * A line per request at info whatever accessLogLevel says, with the caller's key name (as the
   * service reported it) and the client address. Never a key: only the path is logged, no query.
   */
  readonly verbose?: boolean;
}

/** A route as the handler exposes it, for start-up logs and tooling. */
export interface RouteInfo {
  readonly httpMethod: string;
  readonly template: string;
  /** Fully-qualified rpc name. */
  readonly rpc: string;
}

export interface GatewayHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  readonly routes: readonly RouteInfo[];
  /** Ends every open stream, so a server can close. */
  abortStreams(): void;
}

/** Per-request state, kept in one object to avoid closures per step. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly started: number;
  readonly path: string;
  route: CompiledRoute | undefined;
  /** CORS headers of every answer to this request. */
  readonly cors: Readonly<Record<string, string>> | undefined;
  /** The caller's key name, as the service reported it (for the verbose line). */
  caller?: string;
}

export function createGatewayHandler(options: GatewayHandlerOptions): GatewayHandler {
  const registry = typeRegistryOf(options.services);
  const table = compileRouteTable(routeSourcesOf(options.services), registry);
  const frontStyle = frontStyleOf(options.services, options.defaultStyle);
  const limit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const { transport, logger, timeoutMs } = options;
  const verbose = options.verbose === true;
  const accessLog = accessLogWriter(logger, verbose ? "info" : options.accessLogLevel);
  const cors = options.cors ? createCors(options.cors) : undefined;
  const clientIp = clientIpResolver(options.clientAddress);
  // The client's address as the front resolved it (forwarded headers from trusted proxies).
  const forwardHeaders: HeaderForwarder | undefined = options.clientAddress
    ? (req, out) => {
        out["x-meshwork-client-address"] = clientIp(req);
        options.forwardHeaders?.(req, out);
      }
    : options.forwardHeaders;
  const framers: [StreamFramer, ...StreamFramer[]] = [ndjsonFramer, ...(options.streamFramers ?? [])];
  const openStreams = new Set<AbortController>();
  // One framer (and frame cache) per event-stream route, shared by all its clients.
  const sseFramers = new Map<CompiledRoute, SseFramer>();
  for (const route of table.routes) {
    if (route.eventStream) sseFramers.set(route, createSseFramer(route.style, registry));
  }
  const unavailableRetryAfter = String(options.unavailableRetryAfterSeconds ?? DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS);
  const keepAlive = createKeepAlive((options.sseKeepAliveSeconds ?? DEFAULT_SSE_KEEP_ALIVE_SECONDS) * 1000);

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const preflight = cors?.isPreflight(req.method, req.headers) === true;
    const ex: Exchange = {
      req,
      res,
      requestId: requestIdOf(req.headers["x-request-id"]),
      started: performance.now(),
      path: q < 0 ? url : url.slice(0, q),
      route: undefined,
      cors: preflight ? undefined : cors?.answer(req.headers),
    };
    try {
      if (preflight) {
        // Answered here, for any path: a preflight carries no credential and calls no service.
        send(ex, 204, undefined, undefined, cors!.preflight(req.headers));
        return;
      }
      dispatch(ex, url, q);
    } catch (e) {
      // Only a gateway bug lands here; it still gets a well-formed answer.
      fail(ex, e, frontStyle);
    }
  };

  function dispatch(ex: Exchange, url: string, q: number) {
    const httpMethod = ex.req.method ?? "GET";
    const match = table.match(httpMethod, ex.path);
    if (match.kind === "not-found") {
      fail(ex, new HttpError(404, "not_found", "No operation matches this path."), frontStyle);
      return;
    }
    if (match.kind === "method-not-allowed") {
      const allow = match.allow.join(", ");
      const error = new HttpError(405, "method_not_allowed", `This path does not accept ${httpMethod}; it accepts ${allow}.`, undefined, {
        allow,
      });
      fail(ex, error, match.sample.style);
      return;
    }
    ex.route = match.route;
    void serve(ex, match.route, match.segments, q < 0 ? "" : url.slice(q + 1));
  }

  async function serve(ex: Exchange, route: CompiledRoute, segments: readonly string[], rawQuery: string) {
    const { req } = ex;
    try {
      const body =
        route.request.body === "none"
          ? undefined
          : route.request.rawBody
            ? rawBodyJson(req.headers["content-type"], announcesBody(req) ? await readBody(req, limit) : Buffer.alloc(0))
            : await readJsonBody(req, route.request.bodyOptional);
      const input = buildRequest(route.request, segments, rawQuery, body);
      const headers = serviceHeaders(req, ex.requestId, forwardHeaders, route);
      if (route.streaming) {
        await serveStream(ex, route, input, headers);
        return;
      }
      const response = await transport.unary(route.method as DescMethodUnary, disconnectSignal(req.socket), timeoutMs, headers, input);
      ex.caller = response.header.get(CALLER_HEADER) ?? undefined;
      const plan = route.response;
      const extra = clientResponseHeaders(response.header);
      const raw = plan.rawBody(response.message);
      if (raw) {
        send(ex, plan.status, raw.contentType, raw.data, extra);
      } else if (!plan.writesBody) {
        send(ex, plan.status, undefined, undefined, extra);
      } else {
        send(ex, plan.status, "application/json", JSON.stringify(plan.toJson(response.message)), extra);
      }
    } catch (e) {
      fail(ex, e, route.style);
    }
  }

  async function readJsonBody(req: IncomingMessage, optional: boolean): Promise<JsonValue> {
    if (!announcesBody(req)) {
      if (optional) return {};
      throw badRequest("The request body is required.");
    }
    if (!isJsonContentType(req.headers["content-type"])) {
      discardRest(req);
      throw new HttpError(415, "unsupported_media_type", "The request body must be application/json.");
    }
    const buf = await readBody(req, limit);
    if (buf.length === 0) {
      if (optional) return {};
      throw badRequest("The request body is required.");
    }
    try {
      return JSON.parse(buf.toString("utf8")) as JsonValue;
    } catch {
      throw badRequest("The request body is not valid JSON.");
    }
  }

  async function serveStream(ex: Exchange, route: CompiledRoute, input: Message, headers: Record<string, string>) {
    const { res } = ex;
    // A stream ends when its client goes away (a finished response is not a disconnect), or when
    // the server closes (abortStreams).
    const abort = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const sse = sseFramers.get(route);
    const framer = sse ? undefined : selectFramer(ex.req.headers.accept, framers);
    // Event-stream frames are bytes shared by many clients; other framers write text.
    const frame = sse ? (message: Message) => sse.frames(message) : (message: Message) => [framer!.message(route.response.toJson(message))];
    // Registered before anything is awaited: an idle stream must not keep a closing server open.
    openStreams.add(abort);
    let keepAliveEntry: KeepAliveEntry | undefined;
    try {
      // No deadline: a stream lives as long as its client wants it.
      const response = await transport.stream(route.method as DescMethodServerStreaming, abort.signal, undefined, headers, single(input));
      ex.caller = response.header.get(CALLER_HEADER) ?? undefined;
      const messages = response.message[Symbol.asyncIterator]();
      // Lazy framers (and every event stream) learn of an immediate failure before committing to
      // a status.
      let next = framer?.eagerHeaders ? undefined : await messages.next();
      res.writeHead(route.response.status, {
        ...clientResponseHeaders(response.header),
        ...ex.cors,
        ...(sse ? SSE_HEADERS : { "content-type": framer!.contentType, "cache-control": "no-store" }),
        "x-request-id": ex.requestId,
      });
      res.flushHeaders();
      if (sse) keepAliveEntry = keepAlive.add(res);
      // Messages that are ready together leave in one write: corked until the ready ones are in.
      let corked = false;
      const uncork = () => {
        corked = false;
        res.uncork();
      };
      try {
        next ??= await messages.next();
        while (!next.done) {
          if (!corked) {
            corked = true;
            res.cork();
            process.nextTick(uncork);
          }
          // Corked, the frames of one message (or of several ready at once) leave as one chunk.
          let writable = true;
          for (const chunk of frame(next.value)) writable = res.write(chunk) && writable;
          keepAliveEntry?.touch();
          if (!writable) await drained(res);
          next = await messages.next();
        }
        res.end();
        logDone(ex, route.response.status, undefined);
      } catch (e) {
        // The status line is gone: the failure becomes the stream's last frame.
        const error = fromConnectError(e, route.style.failedPreconditionStatus, route.renameField);
        if (!res.destroyed) {
          const document = renderError(error, route.style.errorStyle).document;
          res.end(sse ? sse.error(document) : framer!.error(error.status, document));
        }
        // The client saw the success status; a server fault in the stream is still an error to log.
        logDone(ex, res.destroyed ? 499 : route.response.status, e, res.destroyed ? undefined : error.status);
      }
    } finally {
      keepAliveEntry?.remove();
      openStreams.delete(abort);
    }
  }

  function fail(ex: Exchange, reason: unknown, style: ServiceStyle) {
    const route = ex.route;
    const error =
      reason instanceof HttpError ? reason : fromConnectError(reason, route?.style.failedPreconditionStatus ?? 400, route?.renameField);
    if (ex.res.headersSent || ex.res.destroyed) {
      logDone(ex, ex.res.destroyed && !ex.res.writableFinished ? 499 : error.status, reason);
      return;
    }
    // A failed call's metadata holds what the service set (Retry-After on a 429, say).
    if (reason instanceof ConnectError) ex.caller = reason.metadata.get(CALLER_HEADER) ?? undefined;
    let headers = reason instanceof ConnectError ? withServiceHeaders(error, reason.metadata) : error.headers;
    // A 503 is an invitation to come back: clients and proxies need to be told when.
    if (error.status === 503 && !hasHeader(headers, "retry-after")) headers = { ...headers, "retry-after": unavailableRetryAfter };
    const answer = route && reason instanceof ConnectError ? answerDetail(route, reason) : undefined;
    if (answer !== undefined) {
      // The service chose to answer this status with its response message (an unhealthy report).
      send(ex, error.status, "application/json", JSON.stringify(route!.response.toJson(answer)), headers, reason);
      return;
    }
    const rendered = renderError(error, style.errorStyle);
    send(ex, error.status, rendered.contentType, JSON.stringify(rendered.document), headers, reason);
  }

  function send(
    ex: Exchange,
    status: number,
    contentType: string | undefined,
    body: string | Uint8Array | undefined,
    extra?: Readonly<Record<string, string>>,
    reason?: unknown,
  ) {
    // The service's headers first: the gateway's own framing and request id always win.
    const headers: Record<string, string | number> = { ...extra, ...ex.cors, "x-request-id": ex.requestId };
    if (contentType !== undefined && body !== undefined) {
      headers["content-type"] = contentType;
      headers["content-length"] = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
    }
    ex.res.writeHead(status, headers);
    ex.res.end(body);
    logDone(ex, status, reason);
  }

  function logDone(ex: Exchange, status: number, reason: unknown, streamErrorStatus?: number) {
    const failed = status >= 500 || (streamErrorStatus ?? 0) >= 500;
    // A silent access log costs nothing per request; failures are logged all the same.
    if (!failed && accessLog === undefined) return;
    const fields: Record<string, unknown> = {
      method: ex.req.method,
      path: ex.route ? ex.route.logPath(ex.path) : ex.path,
      status,
      durationMs: Math.round((performance.now() - ex.started) * 1000) / 1000,
      requestId: ex.requestId,
    };
    if (ex.route) fields.rpc = ex.route.label;
    if (verbose) {
      fields.keyName = ex.caller ?? null;
      fields.clientIp = clientIp(ex.req);
    }
    if (streamErrorStatus !== undefined) fields.streamError = streamErrorStatus;
    if (failed) {
      // The real cause stays in the log; the client only saw a generic detail.
      fields.err = reason instanceof Error ? reason.message : String(reason);
      // An unavailable dependency is an outage to watch, not a bug to fix.
      if ((streamErrorStatus ?? status) === 503) logger.warn(fields, "request failed: service unavailable");
      else logger.error(fields, "request failed");
    } else {
      accessLog!(fields, "request");
    }
  }

  return Object.assign(handler, {
    routes: table.routes.map((r) => ({ httpMethod: r.httpMethod, template: r.template, rpc: r.label })),
    abortStreams() {
      for (const abort of openStreams) abort.abort();
    },
  });
}

// One signal per connection, aborted when it closes: a client that goes away cancels the calls it
// was waiting for. Made once per socket, not per request (an AbortController costs microseconds);
// a call listens only while it runs, so a finished request on a kept-alive socket is untouched.
const disconnects = new WeakMap<Socket, AbortSignal>();

function disconnectSignal(socket: Socket): AbortSignal {
  let signal = disconnects.get(socket);
  if (signal === undefined) {
    const controller = new AbortController();
    signal = controller.signal;
    // Pipelined requests each listen while they run: many is normal, not a leak.
    setMaxListeners(0, signal);
    disconnects.set(socket, signal);
    if (socket.destroyed) controller.abort();
    else socket.once("close", () => controller.abort());
  }
  return signal;
}

/**
 * A response message a failed call carries as an error detail of the method's own output type: the
 * contract's way to answer an error status with a body (a health report with 503), while gRPC
 * and Connect callers still see the error code.
 */
function answerDetail(route: CompiledRoute, reason: ConnectError): Message | undefined {
  if (!route.response.writesBody || route.streaming) return undefined;
  try {
    return reason.findDetails(route.method.output)[0];
  } catch {
    // A detail that does not decode is the service's bug; the error answer still stands.
    return undefined;
  }
}

function hasHeader(headers: Readonly<Record<string, string>> | undefined, name: string): boolean {
  return headers !== undefined && Object.keys(headers).some((key) => key.toLowerCase() === name);
}

async function* single(message: Message) {
  yield message;
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
