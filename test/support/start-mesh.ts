// Starts a whole mesh inside a test process on free ports. With DATABASE_URL / NATS_URL in the
// environment (CI's second pass) it runs against the real PostgreSQL (a fresh database per call)
// and NATS; otherwise on the embedded defaults in a temporary data directory.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabaseUrl } from "./test-database.js";
import { createLogger } from "../../services/runtime/logging/index.js";
type Logger = ReturnType<typeof createLogger>;
import { missingServers, notConfigured, realInfra, realInfraRequired } from "./real-infra.js";
import { type Mesh, type MeshMode, startMesh } from "../../services/mesh.js";
import { loadMeshConfig, type MeshConfig } from "../../services/mesh-config.js";
import type { ServiceModule } from "../../services/runtime/module/index.js";

export interface TestMesh extends Mesh {
  config: MeshConfig;
  /** Base URL of a REST front, e.g. `frontUrl("tracking")`. */
  frontUrl(name: string): string;
  serviceUrl: string;
}

export interface TestMeshOptions {
  mode?: MeshMode;
  /** Reuse a data directory (restart tests); a new temporary one by default. */
  dataDir?: string;
  /** Reuse a database (restart tests); a new one by default on real PostgreSQL. */
  databaseUrl?: string;
  flags?: string[];
  /** The mesh's logger; by default a silent one (MESHWORK_TEST_LOG=debug shows it). */
  logger?: Logger;
  /** The modules to host instead of the registry's (same settings schemas). */
  modules?: readonly ServiceModule[];
}

// Tor's bulk exit list is outside this machine's reach: every test mesh fetches a loopback copy in
// the same format (one server per test process) unless a test names its own source.
let torSource: Promise<string> | undefined;
function loopbackTorSource(): Promise<string> {
  torSource ??= new Promise((resolve) => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("# exit addresses for tests (documentation ranges)\n192.0.2.1\n2001:db8::1\n");
    });
    server.listen(0, "127.0.0.1", () => {
      server.unref();
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/torbulkexitlist`);
    });
  });
  return torSource;
}

export async function startTestMesh(options: TestMeshOptions = {}): Promise<TestMesh> {
  const missing = realInfraRequired() ? missingServers(["postgres", "nats"]) : [];
  if (missing.length > 0) {
    throw new Error(`MESHWORK_REQUIRE_REAL_INFRA is set but ${notConfigured(missing)}: this mesh would run embedded`);
  }
  const infra = realInfra();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "meshwork-test-"));
  const mode = options.mode ?? { kind: "all" };
  let databaseUrl = options.databaseUrl;
  let dropDatabase: (() => Promise<void>) | undefined;
  if (!databaseUrl && infra.databaseUrl && mode.kind !== "gateway") {
    const created = await createTestDatabaseUrl(infra.databaseUrl);
    databaseUrl = created.url;
    dropDatabase = created.drop;
  }
  const flags = [
    `--Data:Dir=${dataDir}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Outbox:PollIntervalMs=200",
    `--Protection:TorExits:SourceUrl=${await loopbackTorSource()}`,
    // The agent gateway's own telemetry prints to the console by default; tests that read it wire their own.
    "--Gateway:Telemetry:Enabled=false",
    ...(databaseUrl ? [`--Database:Url=${databaseUrl}`] : []),
    ...(infra.natsUrl ? [`--Nats:Url=${infra.natsUrl}`] : []),
    ...(options.flags ?? []),
  ];
  const config = loadMeshConfig({ env: {}, flags, cwd: dataDir });
  const logger = options.logger ?? createLogger({ level: process.env.MESHWORK_TEST_LOG ?? "silent" });
  const mesh = await startMesh({ config, logger, mode, modules: options.modules });
  return {
    ...mesh,
    config,
    serviceUrl: `http://127.0.0.1:${mesh.servicePort}`,
    frontUrl(name) {
      const front = mesh.fronts.find((f) => f.name === name);
      if (!front) throw new Error(`no front named ${name}`);
      return front.url;
    },
    async close() {
      await mesh.close();
      await dropDatabase?.();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
