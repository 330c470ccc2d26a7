// Test support: a loopback npm registry that real `npm install` installs from. The package it
// serves is made at test time with `npm pack` of a tiny package (package.json + bin), so the
// tarball, its shasum and its integrity are npm's own. The bin is a stand-in for the next release
// of app-daemon: `install` writes the process manager's definition naming itself (and records the
// flags it got), `supervise` answers the control socket as a running 0.2.0 until SIGTERM.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ExecutionContext } from "ava";

const exec = promisify(execFile);

const NEXT_BIN = `#!/usr/bin/env node
// app-daemon's stand-in next release (made by services/daemon/fake-npm-registry.ts).
import { createServer } from "node:http";
import { mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
const [command, ...args] = process.argv.slice(2);
const flag = args.find((a) => a.startsWith("--AgentGateway:DataDir="));
if (!flag) process.exit(2);
const dataDir = flag.slice("--AgentGateway:DataDir=".length);
const script = realpathSync(fileURLToPath(import.meta.url));
if (command === "install") {
  mkdirSync(join(dataDir, "daemon"), { recursive: true });
  writeFileSync(join(dataDir, "daemon", "service.json"), JSON.stringify({ version: 1, node: process.execPath, script, args: ["run"] }));
  writeFileSync(join(dataDir, "reconciled.json"), JSON.stringify({ version: "VERSION", args }));
} else if (command === "supervise") {
  const pidFile = join(dataDir, "daemon", "supervisor.pid");
  writeFileSync(pidFile, String(process.pid));
  const socket = join(dataDir, "daemon.sock");
  rmSync(socket, { force: true });
  const server = createServer((req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({ state: "running", version: "VERSION", uptimeSeconds: 0, pid: process.pid, health: "Healthy" }),
    ),
  );
  server.listen(socket);
  process.on("SIGTERM", () => {
    server.close();
    rmSync(pidFile, { force: true });
    process.exit(0);
  });
} else process.exit(2);
`;

export interface PackedPackage {
  name: string;
  version: string;
  tarball: Buffer;
  shasum: string;
  integrity: string;
}

/** `npm pack` of a package `name@version` whose `app-daemon` bin is the stand-in above. */
export async function packNextRelease(dir: string, name: string, version: string): Promise<PackedPackage> {
  const source = join(dir, "source");
  await mkdir(join(source, "bin"), { recursive: true });
  await writeFile(
    join(source, "package.json"),
    JSON.stringify({ name, version, type: "module", bin: { "app-daemon": "bin/app-daemon.js" } }, null, 2),
  );
  await writeFile(join(source, "bin", "app-daemon.js"), NEXT_BIN.replaceAll("VERSION", version), { mode: 0o755 });
  // A cache of its own: npm keeps what it packs by integrity, and an install would then take it
  // from there instead of asking the registry.
  const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: source,
    env: { ...process.env, npm_config_cache: join(dir, "pack-cache") },
  });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  const tarball = await readFile(join(dir, packed!.filename));
  return {
    name,
    version,
    tarball,
    shasum: createHash("sha1").update(tarball).digest("hex"),
    integrity: `sha512-${createHash("sha512").update(tarball).digest("base64")}`,
  };
}

export interface FakeRegistry {
  url: string;
  /** Versions the metadata lists; the packed one is installable, the others are names only. */
  versions: string[];
  /** Serve the tarball with a byte changed (npm refuses it: EINTEGRITY). */
  corrupt: boolean;
  /** Every request, in order. */
  seen: { method: string; url: string; headers: IncomingHttpHeaders }[];
  /** While set, tarball requests are held until `release()` (which clears it: npm may ask again). */
  hold: boolean;
  /** Tarball requests held now. */
  readonly waiting: number;
  release(): void;
}

/** Serves `pkg` (metadata and tarball) to requests bearing `token`; 401 to any other. */
export async function fakeRegistry(t: ExecutionContext, pkg: PackedPackage, token: string): Promise<FakeRegistry> {
  let held: (() => void)[] = [];
  const registry: FakeRegistry = {
    url: "",
    versions: ["0.1.0"],
    corrupt: false,
    hold: false,
    seen: [],
    get waiting() {
      return held.length;
    },
    release: () => {
      registry.hold = false;
      for (const go of held.splice(0)) go();
    },
  };
  const tarballPath = `/${pkg.name}/-/${pkg.name}-${pkg.version}.tgz`;
  const server = createServer(async (req, res) => {
    registry.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    if (req.headers.authorization !== `Bearer ${token}`) return void res.writeHead(401).end('{"error":"unauthorized"}');
    if (req.method === "GET" && req.url === `/${pkg.name}`) {
      const versions = Object.fromEntries(
        registry.versions.map((version) => [
          version,
          {
            name: pkg.name,
            version,
            bin: { "app-daemon": "bin/app-daemon.js" },
            dist:
              version === pkg.version
                ? { tarball: `${registry.url}${tarballPath.slice(1)}`, shasum: pkg.shasum, integrity: pkg.integrity }
                : { tarball: `${registry.url}${pkg.name}/-/${pkg.name}-${version}.tgz` },
          },
        ]),
      );
      const latest = registry.versions.at(-1)!;
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ name: pkg.name, "dist-tags": { latest }, versions, modified: new Date().toISOString() }));
      return;
    }
    if (req.method === "GET" && req.url === tarballPath) {
      if (registry.hold) await new Promise<void>((resolve) => held.push(resolve));
      const body = Buffer.from(pkg.tarball);
      if (registry.corrupt) body[body.length - 10] = (body[body.length - 10]! + 1) % 256;
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length }).end(body);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  registry.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  t.teardown(() => {
    registry.release();
    held = [];
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return registry;
}
