// The hubs of a front: `POST <hub>/negotiate`, the WebSocket upgrade of `GET <hub>` (with the
// negotiated `id`, or without it for clients that skip negotiation), and the plain `GET <hub>`
// event stream. Which hubs exist, how connections are admitted and what each method calls come
// from the contract's hub options; nothing here names a hub or a resource.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { create, createRegistry, type DescService, type JsonObject, type Message } from "@bufbuild/protobuf";
import { file_google_protobuf_struct, file_google_protobuf_wrappers } from "@bufbuild/protobuf/wkt";
import { ConnectError, type Transport } from "@connectrpc/connect";
import { WebSocketServer } from "ws";
import { HubConnectRequestSchema, type HubConnectResponse } from "../../gen/meshwork/api/v1/hubs_pb.js";
import { fromConnectError } from "../errors/from-connect-error.js";
import { HttpError } from "../errors/http-error.js";
import { renderError } from "../errors/render-error.js";
import { serviceHeaders, type HeaderForwarder } from "../http/forward-headers.js";
import { requestIdOf } from "../http/request-id.js";
import { clientResponseHeaders, withServiceHeaders } from "../http/response-headers.js";
import { type AccessLogLevel, accessLogWriter, type GatewayLogger } from "../logger.js";
import { serveHubEventStream } from "./hub-event-stream.js";
import { HubConnection } from "./hub-connection.js";
import { typeRegistryOf } from "../transcoder/type-registry.js";
import { compileHubTable, type CompiledHub } from "./hub-table.js";

export const DEFAULT_HUB_KEEP_ALIVE_SECONDS = 15;
export const DEFAULT_HUB_CLIENT_TIMEOUT_SECONDS = 30;
export const DEFAULT_HUB_HANDSHAKE_TIMEOUT_SECONDS = 15;

export interface HubServerOptions {
  readonly services: readonly DescService[];
  readonly transport: Transport;
  readonly logger: GatewayLogger;
  readonly forwardHeaders?: HeaderForwarder;
  /** Level of the line per negotiate, WebSocket request and event stream; 5xx log as errors whatever it is. */
  readonly accessLogLevel?: AccessLogLevel;
  /** Largest message a client may send; more closes the connection. */
  readonly maxMessageBytes: number;
  /** A Ping is sent when nothing else was for this long; default 15 s. */
  readonly keepAliveSeconds?: number;
  /** A client that sends nothing (not even a ping) for this long is disconnected; default 30 s. */
  readonly clientTimeoutSeconds?: number;
  /** Time a client has to send its handshake after the upgrade; default 15 s. */
  readonly handshakeTimeoutSeconds?: number;
  /** Keep-alive comment interval of the plain-GET event streams. */
  readonly sseKeepAliveSeconds: number;
}

export interface HubServer {
  /** How many hubs the front serves; 0 means nothing to hook. */
  readonly size: number;
  readonly paths: readonly string[];
  /** Serves a negotiate or a plain GET of a hub; false when the request is not a hub's. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** The server's `upgrade` listener. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Ends every connection and event stream, so the server can close. */
  close(): void;
}

const TRANSPORTS = [{ transport: "WebSockets", transferFormats: ["Text"] }];
// Clients put the token in the URL as it is (`?id=<token>`).
const URL_SAFE_TOKEN = /^[A-Za-z0-9._~-]{1,512}$/;

export function createHubServer(options: HubServerOptions): HubServer {
  const { transport, forwardHeaders } = options;
  // The wrappers and google.protobuf.Value are how a client call passes plain JSON arguments: known
  // whether or not the services' files import them.
  const registry = createRegistry(typeRegistryOf(options.services), file_google_protobuf_wrappers, file_google_protobuf_struct);
  const logger = options.logger;
  const accessLog = accessLogWriter(logger, options.accessLogLevel);
  /** One line per hub request, by path only: the query may hold the key. */
  const logRequest = (method: string | undefined, path: string, status: number, started: number, requestId: string) =>
    accessLog?.({ method, path, status, durationMs: Date.now() - started, requestId }, "request");
  const table = compileHubTable(options.services, registry);
  const keepAliveMs = (options.keepAliveSeconds ?? DEFAULT_HUB_KEEP_ALIVE_SECONDS) * 1000;
  const clientTimeoutMs = (options.clientTimeoutSeconds ?? DEFAULT_HUB_CLIENT_TIMEOUT_SECONDS) * 1000;
  const handshakeTimeoutMs = (options.handshakeTimeoutSeconds ?? DEFAULT_HUB_HANDSHAKE_TIMEOUT_SECONDS) * 1000;
  const connections = new Set<HubConnection>();
  const eventStreams = new Set<AbortController>();
  const argumentWriters = new Map<string, (message: Message) => JsonObject>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxMessageBytes, clientTracking: false });
  let ticker: NodeJS.Timeout | undefined;
  const tickMs = Math.max(10, Math.min(1000, Math.floor(Math.min(keepAliveMs, clientTimeoutMs, handshakeTimeoutMs) / 4)));
  // A ping goes out one tick early, so no gap between messages exceeds the keep-alive interval.
  const pingAfterMs = Math.max(0, keepAliveMs - tickMs);
  // A client's silence is counted on the server's own clock: wall time minus the time the event
  // loop was held up (the ticker fired late). While the loop is saturated, what clients send waits
  // unread in the sockets; a client must not be timed out for pings the server did not get to read.
  let heldUpMs = 0;
  let lastTickAt = Date.now();
  const clock = () => Date.now() - heldUpMs;

  // One timer for every connection: pings when a connection was quiet, ends the silent ones.
  const tick = () => {
    const now = Date.now();
    heldUpMs += Math.max(0, now - lastTickAt - tickMs);
    lastTickAt = now;
    const live = now - heldUpMs;
    for (const connection of connections) {
      if (!connection.handshaken) {
        if (now - connection.openedAt >= handshakeTimeoutMs) connection.close();
        continue;
      }
      if (live - connection.lastReceived >= clientTimeoutMs) {
        connection.close("Connection closed with an error. Client timeout elapsed without receiving a message from the client.");
      } else if (now - connection.lastSent >= pingAfterMs) {
        connection.ping();
      }
    }
  };
  const track = (connection: HubConnection) => {
    connections.add(connection);
    if (ticker === undefined) {
      lastTickAt = Date.now();
      ticker = setInterval(tick, tickMs);
      ticker.unref();
    }
  };
  const untrack = (connection: HubConnection) => {
    connections.delete(connection);
    if (connections.size === 0 && ticker !== undefined) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };

  /** The headers of every call made for a request: the REST defaults plus `?api_key=` as the key. */
  function callHeaders(req: IncomingMessage, query: URLSearchParams, requestId: string): Record<string, string> {
    const headers = serviceHeaders(req, requestId, forwardHeaders);
    const apiKey = query.get("api_key");
    if (headers["x-api-key"] === undefined && apiKey) headers["x-api-key"] = apiKey;
    // Browsers cannot set headers on a WebSocket: SignalR clients send their bearer token as `access_token`.
    const accessToken = query.get("access_token");
    if (headers.authorization === undefined && accessToken) headers.authorization = `Bearer ${accessToken}`;
    return headers;
  }

  async function admit(hub: CompiledHub, headers: Record<string, string>, connectionToken: string, signal: AbortSignal) {
    const response = await transport.unary(
      hub.connect as never,
      signal,
      undefined,
      headers,
      create(HubConnectRequestSchema, { hub: hub.path, connectionToken }),
    );
    const answer = response.message as HubConnectResponse;
    if (answer.connectionId === "" || (connectionToken === "" && !URL_SAFE_TOKEN.test(answer.connectionToken))) {
      throw new ConnectError(`${hub.connect.name} answered without a connection id or with a token that is not URL-safe`);
    }
    return { answer, header: response.header };
  }

  function errorAnswer(hub: CompiledHub | undefined, reason: unknown) {
    const style = hub?.style;
    const error = reason instanceof HttpError ? reason : fromConnectError(reason, style?.failedPreconditionStatus ?? 400);
    const headers = reason instanceof ConnectError ? withServiceHeaders(error, reason.metadata) : error.headers;
    const rendered = renderError(error, style?.errorStyle ?? "problem-json");
    return { status: error.status, headers, contentType: rendered.contentType, body: JSON.stringify(rendered.document), error };
  }

  function logFailure(hub: CompiledHub, what: string, status: number, reason: unknown) {
    if (status < 500) return;
    const fields = {
      hub: hub.path,
      rpc: `${hub.service.typeName}/${hub.connect.name}`,
      status,
      err: reason instanceof Error ? reason.message : String(reason),
    };
    if (status === 503) logger.warn(fields, `${what} failed: service unavailable`);
    else logger.error(fields, `${what} failed`);
  }

  async function negotiate(hub: CompiledHub, req: IncomingMessage, res: ServerResponse, query: URLSearchParams) {
    const started = Date.now();
    const requestId = requestIdOf(req.headers["x-request-id"]);
    // The body (clients send none) is not read.
    req.resume();
    const abort = new AbortController();
    res.once("close", () => abort.abort());
    try {
      const version = Number(query.get("negotiateVersion") ?? "0");
      const { answer, header } = await admit(hub, callHeaders(req, query, requestId), "", abort.signal);
      // Version 0 has no token: the id is what the client sends back, so it is the token.
      const body =
        Number.isInteger(version) && version >= 1
          ? {
              negotiateVersion: 1,
              connectionId: answer.connectionId,
              connectionToken: answer.connectionToken,
              availableTransports: TRANSPORTS,
            }
          : { connectionId: answer.connectionToken, availableTransports: TRANSPORTS };
      const text = JSON.stringify(body);
      res.writeHead(200, {
        ...clientResponseHeaders(header),
        "content-type": "application/json",
        "content-length": Buffer.byteLength(text),
        "cache-control": "no-store",
        "x-request-id": requestId,
      });
      res.end(text);
      logRequest("POST", `${hub.path}/negotiate`, 200, started, requestId);
    } catch (e) {
      const answer = errorAnswer(hub, e);
      logFailure(hub, "hub negotiate", answer.status, e);
      if (res.headersSent || res.destroyed) return;
      res.writeHead(answer.status, {
        ...answer.headers,
        "content-type": answer.contentType,
        "content-length": Buffer.byteLength(answer.body),
        "x-request-id": requestId,
      });
      res.end(answer.body);
      logRequest("POST", `${hub.path}/negotiate`, answer.status, started, requestId);
    }
  }

  function refuse(req: IncomingMessage, res: ServerResponse, path: string, hub: CompiledHub, error: HttpError) {
    const started = Date.now();
    const requestId = requestIdOf(req.headers["x-request-id"]);
    const answer = errorAnswer(hub, error);
    req.resume();
    res.writeHead(answer.status, {
      ...answer.headers,
      "content-type": answer.contentType,
      "content-length": Buffer.byteLength(answer.body),
      "x-request-id": requestId,
    });
    res.end(answer.body);
    logRequest(req.method, path, answer.status, started, requestId);
  }

  function refuseUpgrade(
    socket: Duplex,
    status: number,
    headers: Readonly<Record<string, string>> | undefined,
    contentType: string,
    body: string,
  ) {
    if (socket.destroyed) return;
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nConnection: close\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
    for (const [name, value] of Object.entries(headers ?? {})) head += `${name}: ${value.replace(/[\r\n]/g, "")}\r\n`;
    socket.end(`${head}\r\n${body}`);
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const started = Date.now();
    const requestId = requestIdOf(req.headers["x-request-id"]);
    const { path, query } = splitUrl(req.url);
    const hub = table.get(path);
    socket.on("error", () => socket.destroy());
    if (!hub || (req.method ?? "GET") !== "GET" || (req.headers.upgrade ?? "").toLowerCase() !== "websocket") {
      const answer = errorAnswer(hub, new HttpError(404, "not_found", "No hub accepts a WebSocket on this path."));
      refuseUpgrade(socket, answer.status, { ...answer.headers, "x-request-id": requestId }, answer.contentType, answer.body);
      logRequest(req.method, path, answer.status, started, requestId);
      return;
    }
    const abort = new AbortController();
    const onClose = () => abort.abort();
    socket.once("close", onClose);
    let connectionId: string;
    let headers: Record<string, string>;
    try {
      headers = callHeaders(req, query, requestId);
      ({ connectionId } = (await admit(hub, headers, query.get("id") ?? "", abort.signal)).answer);
    } catch (e) {
      const answer = errorAnswer(hub, e);
      logFailure(hub, "hub connection", answer.status, e);
      refuseUpgrade(socket, answer.status, { ...answer.headers, "x-request-id": requestId }, answer.contentType, answer.body);
      logRequest("GET", path, answer.status, started, requestId);
      return;
    } finally {
      socket.off("close", onClose);
    }
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      const deps = { hub, transport, registry, logger, headers, connectionId, argumentWriters, clock };
      const connection = new HubConnection(ws, deps, (closed) => {
        untrack(closed);
        logger.debug?.({ hub: hub.path, connectionId }, "hub connection closed");
      });
      track(connection);
      logRequest("GET", path, 101, started, requestId);
    });
  }

  return {
    size: table.size,
    paths: [...table.keys()],
    handle(req, res) {
      const { path, query } = splitUrl(req.url);
      const method = req.method ?? "GET";
      // Preflights are the REST handler's (CORS), as on every other path.
      if (method === "OPTIONS") return false;
      if (path.endsWith("/negotiate")) {
        const hub = table.get(path.slice(0, -"/negotiate".length));
        if (!hub) return false;
        if (method !== "POST") {
          refuse(
            req,
            res,
            path,
            hub,
            new HttpError(405, "method_not_allowed", `This path does not accept ${method}; it accepts POST.`, undefined, { allow: "POST" }),
          );
          return true;
        }
        void negotiate(hub, req, res, query);
        return true;
      }
      const hub = table.get(path);
      if (!hub) return false;
      if (method !== "GET") {
        refuse(
          req,
          res,
          path,
          hub,
          new HttpError(405, "method_not_allowed", `This path does not accept ${method}; it accepts GET.`, undefined, { allow: "GET" }),
        );
        return true;
      }
      if (!hub.eventStream) {
        refuse(
          req,
          res,
          path,
          hub,
          new HttpError(400, "bad_request", "This hub is served over WebSockets: connect with a SignalR client."),
        );
        return true;
      }
      const started = Date.now();
      const requestId = requestIdOf(req.headers["x-request-id"]);
      const abort = new AbortController();
      eventStreams.add(abort);
      void serveHubEventStream({
        hub,
        plan: hub.eventStream,
        req,
        res,
        requestId,
        headers: callHeaders(req, query, requestId),
        transport,
        logger,
        abort,
        keepAliveMs: options.sseKeepAliveSeconds * 1000,
        admit: (headers, signal) => admit(hub, headers, "", signal),
        errorAnswer: (e) => errorAnswer(hub, e),
      }).finally(() => {
        eventStreams.delete(abort);
        logRequest("GET", path, res.statusCode, started, requestId);
      });
      return true;
    },
    upgrade(req, socket, head) {
      void upgrade(req, socket, head).catch((e: unknown) => {
        logger.error({ err: e instanceof Error ? e.message : String(e) }, "hub upgrade failed");
        socket.destroy();
      });
    },
    close() {
      const closing = [...connections];
      for (const connection of closing) connection.close(undefined, true);
      for (const abort of eventStreams) abort.abort();
      // A client that does not answer the close frame must not hold the server's close for ws's 30 s.
      if (closing.length > 0) {
        setTimeout(() => {
          for (const connection of closing) connection.ws.terminate();
        }, 1000).unref();
      }
    },
  };
}

/** The path and the query of a request target; the query (api_key may be in it) is never logged. */
function splitUrl(url: string | undefined): { path: string; query: URLSearchParams } {
  const target = url ?? "/";
  const q = target.indexOf("?");
  return q < 0
    ? { path: target, query: new URLSearchParams() }
    : { path: target.slice(0, q), query: new URLSearchParams(target.slice(q + 1)) };
}
