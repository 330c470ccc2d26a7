// The daemon's control socket, `~/.app/daemon.sock` (mode 600): `app-daemon status` (and later
// the other commands) ask the running daemon over HTTP on this unix socket. GET /status answers
// { state, version, uptimeSeconds, pid, health }.
import { request } from "node:http";
import { createServer, type Server } from "node:http";
import { chmod, mkdir, rm } from "node:fs/promises";
import { dirname } from "node:path";

export interface LiveStatus {
  state: "running" | "starting";
  version?: string;
  uptimeSeconds: number;
  pid: number;
  health: unknown;
  /** In serve modes: where the probes answer (Daemon:HealthPort). */
  healthUrl?: string;
}

export interface ControlSocket {
  setState(state: LiveStatus["state"]): void;
  close(): void;
}

export async function serveControlSocket(
  path: string,
  info: { version: string; manager: string; healthUrl?: string },
): Promise<ControlSocket> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // A socket file left by a daemon that died: nobody answers on it, so it is replaced.
  if (await queryDaemon(path)) throw new Error(`another app-daemon is running (${path} answers)`);
  await rm(path, { force: true });
  const started = Date.now();
  let state: LiveStatus["state"] = "starting";
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/status") {
      const body: LiveStatus = {
        state,
        version: info.version,
        uptimeSeconds: Math.floor((Date.now() - started) / 1000),
        pid: process.pid,
        health: state === "running" ? "Healthy" : null,
        ...(info.healthUrl ? { healthUrl: info.healthUrl } : {}),
      };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
  server.unref();
  return {
    setState: (next) => {
      state = next;
    },
    close: () => {
      server.close();
    },
  };
}

/** The running daemon's answer on `path`, or undefined when none answers within a second. */
export function queryDaemon(path: string): Promise<LiveStatus | undefined> {
  return new Promise((resolve) => {
    const req = request({ socketPath: path, path: "/status", method: "GET", timeout: 1000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => {
        try {
          resolve(res.statusCode === 200 ? (JSON.parse(text) as LiveStatus) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end();
  });
}
