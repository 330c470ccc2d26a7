// The servers under test, run in a child process of bench/run.ts so the load generator never
// shares their event loop. `servers.ts mesh|raw|grpc-raw <db-url>`; prints one
// `{"benchReady": ...}` line on stdout with its URLs, and stops when stdin closes or on SIGTERM.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { AssetSchema, GetAssetRequestSchema, type GetAssetRequest } from "../gen/tracking/v1/asset_pb.js";
import { GET_ASSET_PATH } from "./grpc-client.js";
import { type MeshMode, startMesh } from "../services/mesh.js";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createLogger } from "../services/runtime/logging/index.js";
import { startMeshTelemetry } from "../services/mesh-telemetry.js";

export type MeshRole = "mesh" | "defaults" | "tracking" | "gateway" | "protection";
export type ServerRole = MeshRole | "raw" | "grpc-raw";
const roles: readonly ServerRole[] = ["mesh", "defaults", "tracking", "gateway", "protection", "raw", "grpc-raw"];

export interface ReadyMessage {
  benchReady: { role: MeshRole; gatewayUrl: string; serviceUrl: string; protectionUrl: string } | { role: "raw" | "grpc-raw"; url: string };
}

// Same pool size as the mesh's default Database:PoolSize, so neither side wins by connections.
const POOL_SIZE = 10;

async function main(): Promise<void> {
  const [role, databaseUrl, serviceAddress] = process.argv.slice(2) as [ServerRole, string | undefined, string | undefined];
  if (!roles.includes(role) || !databaseUrl) {
    throw new Error(`usage: servers.ts ${roles.join("|")} <database-url> [service address, for gateway]`);
  }
  const stop =
    role === "raw"
      ? await startRawServer(databaseUrl)
      : role === "grpc-raw"
        ? await startGrpcRawServer(databaseUrl)
        : await startMeshServer(role, databaseUrl, serviceAddress);
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

/**
 * The mesh as `meshwork` starts it: telemetry, then services and fronts. `mesh` is the all-in-one
 * process tuned for measuring (exporter none, warnings only); `defaults` is the same with the
 * shipped telemetry and logging defaults; `tracking` is `meshwork serve tracking`, and `gateway`
 * is `meshwork gateway` calling it at the address given after the database URL. `protection` is
 * `mesh` with device protection's per-address limits lifted (every benchmark client is 127.0.0.1).
 */
async function startMeshServer(role: MeshRole, databaseUrl: string, serviceAddress?: string): Promise<() => Promise<void>> {
  const tuned = role !== "defaults";
  const flags = [
    `--Database:Url=${databaseUrl}`,
    `--Database:PoolSize=${POOL_SIZE}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    ...(tuned ? ["--Telemetry:Exporter=none", "--Logging:Level=warn"] : []),
    ...(serviceAddress ? [`--Services:Tracking:Address=${serviceAddress}`] : []),
    ...(role === "protection"
      ? [
          "--Protection:RateLimits:Register:Limit=1000000",
          "--Protection:RateLimits:LoginPerIp:Limit=1000000",
          "--Protection:RateLimits:LoginPerEmail:Limit=1000000",
        ]
      : []),
    ...(process.env.NATS_URL ? [`--Nats:Url=${process.env.NATS_URL}`] : []),
  ];
  // No appsettings or Meshwork environment variables from the caller's shell: the run is defined here.
  const config = loadMeshConfig({ env: {}, flags, cwd: process.cwd() });
  const logger = createLogger({ level: config.runtime.logging.level });
  const telemetry = await startMeshTelemetry(config, logger);
  const mode: MeshMode =
    role === "tracking" ? { kind: "service", name: "tracking" } : role === "gateway" ? { kind: "gateway" } : { kind: "all" };
  const mesh = await startMesh({ config, logger, mode });
  const tracking = mesh.fronts.find((front) => front.name === "tracking");
  const protection = mesh.fronts.find((front) => front.name === "protection");
  const serviceUrl = mesh.servicePort === undefined ? "" : `http://${config.runtime.services.host}:${mesh.servicePort}`;
  if (role === "tracking" ? !serviceUrl : !tracking) throw new Error(`the ${role} process started without what it serves`);
  ready({ role, gatewayUrl: tracking?.url ?? "", serviceUrl, protectionUrl: protection?.url ?? "" });
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

// The gRPC baseline: what one careful person writes with @grpc/grpc-js for GetAsset, reading the
// row with a named prepared statement (no ORM), answering the same Asset message.
async function startGrpcRawServer(databaseUrl: string): Promise<() => Promise<void>> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: POOL_SIZE });
  const server = new grpc.Server();
  const definition: grpc.ServiceDefinition = {
    GetAsset: {
      path: GET_ASSET_PATH,
      requestStream: false,
      responseStream: false,
      requestSerialize: (id: GetAssetRequest) => Buffer.from(toBinary(GetAssetRequestSchema, id)),
      requestDeserialize: (bytes: Buffer) => fromBinary(GetAssetRequestSchema, bytes),
      responseSerialize: (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  };
  const getAsset: grpc.handleUnaryCall<GetAssetRequest, Uint8Array> = (call, callback) => {
    const { id } = call.request;
    if (!UUID.test(id)) return callback({ code: grpc.status.INVALID_ARGUMENT, details: "id: must be a UUID" });
    pool.query<AssetRow>({ name: "select-asset", text: SELECT_ASSET, values: [id] }).then(
      ({ rows }) => {
        const row = rows[0];
        if (!row) return callback({ code: grpc.status.NOT_FOUND, details: `asset ${id} not found` });
        const asset = create(AssetSchema, {
          id: row.id,
          ...(row.name !== null && { name: row.name }),
          ...(row.description !== null && { description: row.description }),
          ...(row.category !== null && { category: row.category }),
          ...(row.speed_threshold_kmh !== null && { speedThresholdKmh: row.speed_threshold_kmh }),
          createdAt: timestampFromDate(row.created_at),
          updatedAt: timestampFromDate(row.updated_at),
        });
        callback(null, toBinary(AssetSchema, asset));
      },
      () => callback({ code: grpc.status.INTERNAL, details: "internal error" }),
    );
  };
  server.addService(definition, { GetAsset: getAsset });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  ready({ role: "grpc-raw", url: `http://127.0.0.1:${port}` });
  return async () => {
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    await pool.end();
  };
}

await main();
