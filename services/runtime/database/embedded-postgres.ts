// Runs PGlite on a local socket so the embedded mode speaks the same wire protocol, driver and SQL as a real server.
import { mkdir, rm, stat } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import type { Logger } from "./types.js";

export interface EmbeddedPostgres {
  /** A directory (unix socket) or 127.0.0.1 (TCP), in the form `pg` expects for `host`. */
  host: string;
  port: number;
  user: string;
  database: string;
  isClosed(): boolean;
  close(): Promise<void>;
}

// Linux caps sun_path at 108 bytes and macOS at 104; past that a TCP port on loopback is the fallback.
const MAX_SOCKET_PATH_BYTES = 100;
const SOCKET_PORT = 5432;

// pglite-socket 0.2.17 multiplexes several client connections onto the single PGlite backend, but each
// query still runs alone and an open transaction pins the backend to its connection, so a second pooled
// connection buys no parallelism. The pool therefore holds exactly one connection; the server admits one
// more so a reconnect is not refused while the old socket's close event is still being processed.
const SERVER_MAX_CONNECTIONS = 2;

export async function startEmbeddedPostgres(opts: { dataDir: string; logger: Logger }): Promise<EmbeddedPostgres> {
  const { dataDir, logger } = opts;
  const pgDir = join(dataDir, "pg");
  await mkdir(pgDir, { recursive: true });

  const socketPath = join(dataDir, `.s.PGSQL.${SOCKET_PORT}`);
  const useUnixSocket = process.platform !== "win32" && Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES;
  if (useUnixSocket) await claimSocketPath(socketPath);

  const pglite = await PGlite.create({ dataDir: pgDir });
  const server = useUnixSocket
    ? new PGLiteSocketServer({ db: pglite, path: socketPath, maxConnections: SERVER_MAX_CONNECTIONS })
    : new PGLiteSocketServer({ db: pglite, host: "127.0.0.1", port: 0, maxConnections: SERVER_MAX_CONNECTIONS });
  try {
    await server.start();
  } catch (error) {
    await pglite.close();
    throw error;
  }

  const host = useUnixSocket ? dataDir : "127.0.0.1";
  const port = useUnixSocket ? SOCKET_PORT : Number(server.getServerConn().split(":").pop());
  logger.info({ dataDir: pgDir, socket: server.getServerConn() }, "embedded PostgreSQL (PGlite) listening");

  let closing: Promise<void> | undefined;
  return {
    host,
    port,
    user: "postgres",
    database: "postgres",
    isClosed: () => closing !== undefined || pglite.closed,
    close() {
      closing ??= (async () => {
        await server.stop();
        if (!pglite.closed) await pglite.close();
      })();
      return closing;
    },
  };
}

// A socket file left by a crashed process would make listen() fail, but a live one means another process
// has this data directory open, and two PGlite instances on one directory corrupt it.
async function claimSocketPath(path: string): Promise<void> {
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const alive = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
  if (alive) throw new Error(`another process is serving the embedded database at ${path}`);
  await rm(path, { force: true });
}
