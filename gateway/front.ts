// A REST front: one HTTP server exposing a set of services on its own port, with explicit limits
// on how long a client may take to send a request and how many connections it may hold, so slow
// or oversized requests cost a socket for seconds, not minutes.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FrontRoute } from "../services/runtime/module/index.js";
import { answerClientError } from "./http/client-error.js";
import { createGatewayHandler, DEFAULT_BODY_LIMIT_BYTES, DEFAULT_SSE_KEEP_ALIVE_SECONDS, type GatewayHandlerOptions } from "./handler.js";
import { createHubServer } from "./hubs/index.js";
import { frontStyleOf } from "./style.js";

export type { FrontRoute };

export const DEFAULT_HEADERS_TIMEOUT_SECONDS = 10;
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;
export const DEFAULT_MAX_CONNECTIONS = 10_000;
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;

export interface FrontOptions extends GatewayHandlerOptions {
  /** Shown in logs. */
  readonly name: string;
  readonly host: string;
  /** 0 picks a free port; listen() reports it. */
  readonly port: number;
  /** Time a client has to send the request line and headers; then 408 and the socket closes. Default 10 s. */
  readonly headersTimeoutSeconds?: number;
  /**
   * Time a client has to send the whole request (headers and body); then 408. It ends when the
   * request is received, so a long answer (an event stream) is never cut by it. Default 30 s.
   */
  readonly requestTimeoutSeconds?: number;
  /** Open connections the front accepts; more are closed at once. Default 10,000. */
  readonly maxConnections?: number;
  /** Largest request line plus headers; more answers 431. Default 16 KiB (Node's own). */
  readonly maxHeaderBytes?: number;
  /** Liveness of hub connections (the services' `meshwork.api.v1.hubs`); defaults 15, 30 and 15 s. */
  readonly hubs?: { readonly keepAliveSeconds?: number; readonly clientTimeoutSeconds?: number; readonly handshakeTimeoutSeconds?: number };
  /** Paths served by a protocol of their own, before hubs and REST routes. */
  readonly routes?: readonly FrontRoute[];
}

export interface Front {
  readonly server: Server;
  listen(): Promise<{ port: number }>;
  close(): Promise<void>;
}

/** Compiles every route at once: a contract error throws here, not on the first request. */
export function createFront(options: FrontOptions): Front {
  const logger = options.logger.child({ front: options.name });
  const handler = createGatewayHandler({ ...options, logger });
  const headersTimeout = (options.headersTimeoutSeconds ?? DEFAULT_HEADERS_TIMEOUT_SECONDS) * 1000;
  // Node requires headersTimeout <= requestTimeout (0 turns the request timeout off).
  const requestTimeout = Math.max((options.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS) * 1000, headersTimeout);
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      maxHeaderSize: options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES,
      // Both timeouts are enforced by a periodic sweep (30 s by default in Node), which would let a
      // 10 s limit run to 40 s.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    handler,
  );
  // Hub paths (negotiate, WebSocket upgrades, the plain-GET event stream) come from the contract's
  // hub options; every other request goes to the REST handler.
  const hubs = createHubServer({
    ...options,
    ...options.hubs,
    logger,
    maxMessageBytes: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    sseKeepAliveSeconds: options.sseKeepAliveSeconds ?? DEFAULT_SSE_KEEP_ALIVE_SECONDS,
  });
  const own = new Map((options.routes ?? []).map((route) => [route.path, route]));
  if (hubs.size > 0 || own.size > 0) {
    server.removeListener("request", handler);
    server.on("request", (req, res) => {
      const route = own.size > 0 ? own.get(pathOf(req.url)) : undefined;
      if (route) route.handle(req, res);
      else if (!hubs.handle(req, res)) handler(req, res);
    });
    if (hubs.size > 0) server.on("upgrade", hubs.upgrade);
  }
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const style = frontStyleOf(options.services, options.defaultStyle);
  // Errors Node raises before a request exists (header overflow, timeouts, malformed requests):
  // answered in the front's style instead of Node's bare status line.
  server.on("clientError", (err, socket) => answerClientError(err, socket, style.errorStyle, logger, options.accessLogLevel));
  return {
    server,
    listen() {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port, options.host, () => {
          server.off("error", reject);
          const { port } = server.address() as AddressInfo;
          logger.info({ host: options.host, port, routes: handler.routes.length }, "front listening");
          resolve({ port });
        });
      });
    },
    close() {
      return new Promise((resolve, reject) => {
        if (!server.listening) {
          resolve();
          return;
        }
        // Streams never end on their own; without this, close would wait for them forever.
        handler.abortStreams();
        hubs.close();
        for (const route of own.values()) void Promise.resolve(route.close?.()).catch(() => {});
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
      });
    },
  };
}

function pathOf(url: string | undefined): string {
  const raw = url ?? "/";
  const query = raw.indexOf("?");
  return query < 0 ? raw : raw.slice(0, query);
}
