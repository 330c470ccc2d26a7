// The network face of the services: gRPC, gRPC-web and Connect on one plain-text HTTP/2 port
// (h2c, prior knowledge), with a graceful close that health probes see coming. gRPC calls take
// the fast path (grpc-stream-handler.ts); connect-node's adapter answers everything else.
import { setMaxListeners } from "node:events";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { ServiceRoutes } from "./build-routes.js";
import { CLIENT_ADDRESS_HEADER, clientAddressFor, normalizeAddress } from "./client-address.js";
import { createGrpcStreamHandler, type GrpcStreamHandler } from "./grpc-stream-handler.js";
import type { HealthRegistry } from "./health/health-registry.js";
import type { Logger } from "./logger.js";

export const DEFAULT_SERVICE_PORT = 9090;
const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
// After the grace period handlers are told to stop; this is how long they get to do so.
const ABORT_GRACE_MS = 1_000;

export interface StartServiceHostOptions {
  /** Interface to bind; unset binds every interface. */
  readonly host?: string;
  /** Default 9090; 0 picks a free port (read it back from `port`). */
  readonly port?: number;
  readonly routes: ServiceRoutes;
  readonly logger: Logger;
  /** How long close() lets in-flight calls finish before cancelling them. Default 10 s. */
  readonly shutdownGraceMs?: number;
  /**
   * Peers (gateways) whose x-meshwork-client-address is believed; every other caller's is
   * replaced by its own TCP address.
   */
  readonly trustedProxies?: readonly string[];
}

export interface ServiceHost {
  readonly port: number;
  readonly health: HealthRegistry;
  /** Marks everything NOT_SERVING, stops accepting calls, drains, then cancels stragglers. */
  close(): Promise<void>;
}

export async function startServiceHost(options: StartServiceHostOptions): Promise<ServiceHost> {
  const { routes, logger } = options;
  const graceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const shutdown = new AbortController();
  // Every running call links its signal to this one: more than ten at once is load, not a leak.
  setMaxListeners(0, shutdown.signal);
  const server = http2.createServer(connectNodeAdapter({ routes, shutdownSignal: shutdown.signal }));
  const trusted = new Set((options.trustedProxies ?? []).map(normalizeAddress));
  takeGrpcStreams(server, createGrpcStreamHandler({ routes, logger, shutdownSignal: shutdown.signal }), trusted);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("sessionError", (err) => logger.debug({ err }, "http/2 session error"));

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.listen(options.port ?? DEFAULT_SERVICE_PORT, options.host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (err) => logger.error({ err }, "service host error"));
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    routes.health.shutdown();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // GOAWAY: running streams finish, new ones go elsewhere.
    for (const session of sessions) {
      session.close();
    }
    if (await settlesWithin(closed, graceMs)) {
      return;
    }
    logger.warn({ sessions: sessions.size, graceMs }, "calls still running after the grace period; cancelling them");
    shutdown.abort(new ConnectError("server is shutting down", Code.Unavailable));
    if (!(await settlesWithin(closed, ABORT_GRACE_MS))) {
      for (const session of sessions) {
        session.destroy();
      }
    }
    await closed;
  };

  return {
    port,
    health: routes.health,
    close() {
      closing ??= close();
      return closing;
    },
  };
}

/**
 * Puts the gRPC fast path in front of Node's compatibility layer: a server created with a request
 * listener turns every stream into a request and a response through one "stream" listener of its
 * own; the gRPC streams now bypass it and the others still go through it.
 */
function takeGrpcStreams(server: http2.Http2Server, grpc: GrpcStreamHandler, trusted: ReadonlySet<string>): void {
  const compat = server.listeners("stream");
  if (compat.length !== 1) throw new Error(`expected Node's one http2 compatibility listener, found ${compat.length}`);
  const toRequest = compat[0] as (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => void;
  server.removeListener("stream", toRequest);
  server.on("stream", (stream, headers, ...rest: unknown[]) => {
    // Both paths read the call's metadata from this object: the client address is set here once.
    headers[CLIENT_ADDRESS_HEADER] = clientAddressFor(stream.session?.socket?.remoteAddress, headers[CLIENT_ADDRESS_HEADER], trusted);
    if (!grpc(stream, headers)) toRequest.call(server, stream, headers, ...rest);
  });
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
