// A REST front: one HTTP server exposing a set of services on its own port.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createGatewayHandler, type GatewayHandlerOptions } from "./handler.js";

export interface FrontOptions extends GatewayHandlerOptions {
  /** Shown in logs. */
  readonly name: string;
  readonly host: string;
  /** 0 picks a free port; listen() reports it. */
  readonly port: number;
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
  const server = createServer(handler);
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
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
      });
    },
  };
}
