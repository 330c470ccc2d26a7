// The servers under test, run in a child process of bench/run.ts so the load generator never
// shares their event loop. `servers.ts mesh <db-url>` or `servers.ts raw <db-url>`; prints one
// `{"benchReady": ...}` line on stdout with its URLs, and stops when stdin closes or on SIGTERM.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { startMesh } from "../services/mesh.js";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { startTelemetry } from "../services/runtime/telemetry/index.js";

export interface ReadyMessage {
  benchReady: { role: "mesh"; gatewayUrl: string; serviceUrl: string } | { role: "raw"; url: string };
}

// Same pool size as the mesh's default Database:PoolSize, so neither side wins by connections.
const POOL_SIZE = 10;

async function main(): Promise<void> {
  const [role, databaseUrl] = process.argv.slice(2);
  if ((role !== "mesh" && role !== "raw") || !databaseUrl) {
    throw new Error("usage: servers.ts mesh|raw <database-url>");
  }
  const stop = role === "mesh" ? await startMeshServer(databaseUrl) : await startRawServer(databaseUrl);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`bench servers: shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // The parent holds our stdin open; when it goes away (even killed), so do we.
  process.stdin.on("end", shutdown).resume();
  process.on("SIGTERM", shutdown);
}

function ready(message: ReadyMessage["benchReady"]): void {
  process.stdout.write(`${JSON.stringify({ benchReady: message } satisfies ReadyMessage)}\n`);
}

/** The all-in-one mesh as `meshwork` starts it: telemetry (exporter none), then every service and front. */
async function startMeshServer(databaseUrl: string): Promise<() => Promise<void>> {
  const flags = [
    `--Database:Url=${databaseUrl}`,
    `--Database:PoolSize=${POOL_SIZE}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Logging:Level=warn",
    ...(process.env.NATS_URL ? [`--Nats:Url=${process.env.NATS_URL}`] : []),
  ];
  // No appsettings or Meshwork environment variables from the caller's shell: the run is defined here.
  const config = loadMeshConfig({ env: {}, flags, cwd: process.cwd() });
  const logger = createLogger({ level: config.runtime.logging.level });
  const telemetry = await startTelemetry({
    serviceName: config.runtime.telemetry.serviceName,
    exporter: config.runtime.telemetry.exporter,
    otlpProtocol: config.runtime.telemetry.otlpProtocol,
    endpoint: config.runtime.telemetry.endpoint,
    env: {},
    logger,
  });
  const mesh = await startMesh({ config, logger, mode: { kind: "all" } });
  const tracking = mesh.fronts.find((front) => front.name === "tracking");
  if (!tracking || mesh.servicePort === undefined) throw new Error("the mesh started without a tracking front or service host");
  ready({ role: "mesh", gatewayUrl: tracking.url, serviceUrl: `http://${config.runtime.services.host}:${mesh.servicePort}` });
  return async () => {
    await mesh.close();
    await telemetry.shutdown();
  };
}

// The baseline: what one careful person writes by hand for GET /api/assets/{id}, same answer.
const ASSET_PATH = /^\/api\/assets\/([^/?]+)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
const SELECT_ASSET =
  "select id, name, description, category, speed_threshold_kmh, created_at, updated_at from tracking_asset where id = $1";

interface AssetRow {
  id: string;
  name: string | null;
  description: string | null;
  category: string | null;
  speed_threshold_kmh: number | null;
  created_at: Date;
  updated_at: Date;
}

async function startRawServer(databaseUrl: string): Promise<() => Promise<void>> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: POOL_SIZE });
  const server = createServer((req, res) => void handle(pool, req, res));
  // Same keep-alive behaviour as the gateway's node:http server (defaults on both sides).
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  ready({ role: "raw", url: `http://127.0.0.1:${port}` });
  return async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await pool.end();
  };
}

async function handle(pool: pg.Pool, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const offered = req.headers["x-request-id"];
  const requestId = typeof offered === "string" && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
  const match = req.method === "GET" ? ASSET_PATH.exec(req.url ?? "") : null;
  if (!match) return send(res, requestId, 404, { title: "Not Found", status: 404 });
  const id = match[1]!;
  if (!UUID.test(id)) return send(res, requestId, 400, { title: "Bad Request", status: 400, errors: { id: ["must be a UUID"] } });
  try {
    const { rows } = await pool.query<AssetRow>(SELECT_ASSET, [id]);
    const row = rows[0];
    if (!row) return send(res, requestId, 404, { title: "Not Found", status: 404, detail: `asset ${id} not found` });
    send(res, requestId, 200, {
      id: row.id,
      name: row.name,
      description: row.description,
      category: row.category,
      speedThresholdKmh: row.speed_threshold_kmh,
      createdAt: rfc3339(row.created_at),
      updatedAt: rfc3339(row.updated_at),
    });
  } catch {
    send(res, requestId, 500, { title: "Internal Server Error", status: 500 });
  }
}

function send(res: ServerResponse, requestId: string, status: number, body: object): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": status === 200 ? "application/json" : "application/problem+json",
    "content-length": Buffer.byteLength(json),
    "x-request-id": requestId,
  });
  res.end(json);
}

// The protobuf JSON form of a Timestamp: no fraction when it is zero (toISOString always has one).
function rfc3339(date: Date): string {
  const iso = date.toISOString();
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso;
}

await main();
