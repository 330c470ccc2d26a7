// The daemon's control socket, `~/.app/daemon.sock` (mode 600): `app-daemon status` and the other
// commands ask the running daemon over HTTP on this unix socket. GET /status answers
// { state, version, uptimeSeconds, pid, health, draining, fronts }; the daemon adds its own routes
// (`POST /drain`, `POST /resume`, …) as JSON in, JSON out. Only the socket's owner can connect
// (mode 600 in a 700 directory), which is the whole of its access control.
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
  /** Whether an update's drain holds new turns. */
  draining?: boolean;
  /** The fronts the mesh serves, once it is up. */
  fronts?: { name: string; url: string }[];
}

/** A route of the socket: the request's JSON body (undefined when empty) in, the answer's JSON out. */
export type ControlRoute = (body: unknown) => Promise<unknown> | unknown;

export interface ControlSocket {
  setState(state: LiveStatus["state"]): void;
  /** Fields added to GET /status (draining, fronts). */
  setInfo(extra: Partial<Pick<LiveStatus, "draining" | "fronts">>): void;
  close(): void;
}

export async function serveControlSocket(
  path: string,
  info: { version: string; manager: string; healthUrl?: string },
  routes: Record<string, ControlRoute> = {},
): Promise<ControlSocket> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // A socket file left by a daemon that died: nobody answers on it, so it is replaced.
  if (await queryDaemon(path)) throw new Error(`another app-daemon is running (${path} answers)`);
  await rm(path, { force: true });
  const started = Date.now();
  let state: LiveStatus["state"] = "starting";
  let extra: Partial<LiveStatus> = {};
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/status") {
      const body: LiveStatus = {
        state,
        version: info.version,
        uptimeSeconds: Math.floor((Date.now() - started) / 1000),
        pid: process.pid,
        health: state === "running" ? "Healthy" : null,
        ...(info.healthUrl ? { healthUrl: info.healthUrl } : {}),
        ...extra,
      };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      return;
    }
    const route = routes[`${req.method} ${req.url}`];
    if (!route) return void res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not Found"}');
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      text += chunk;
    });
    req.on("end", async () => {
      try {
        const answer = await route(text.trim() === "" ? undefined : JSON.parse(text));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer ?? {}));
      } catch (error) {
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: (error as Error).message }));
      }
    });
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
    setInfo: (next) => {
      extra = { ...extra, ...next };
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

/** Calls a route of the running daemon: its JSON answer; throws when none answers or the route failed. */
export function callDaemon(path: string, method: string, url: string, body?: unknown, timeoutMs = 10_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: path, path: url, method, timeout: timeoutMs, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          let answer: unknown;
          try {
            answer = text === "" ? {} : JSON.parse(text);
          } catch {
            return reject(new Error(`the daemon answered ${url} with something that is not JSON`));
          }
          if (res.statusCode === 200) return resolve(answer);
          reject(new Error((answer as { error?: string }).error ?? `the daemon answered ${url} with ${res.statusCode}`));
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`the daemon did not answer ${url} within ${Math.round(timeoutMs / 1000)} s`)));
    req.on("error", (error) => reject(error));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
