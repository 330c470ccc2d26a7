// In `serve` modes (a daemon pod running `app-daemon run serve agents`, with no REST front of its
// own), the daemon answers its probes on `Daemon:HealthPort` (18790), bound like the service host
// (`Services:Host`): /health/live while the process runs, /health/ready once the mesh serves (503
// before and while stopping), /health with the daemon's state.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface HealthPort {
  url: string;
  setReady(ready: boolean): void;
  close(): Promise<void>;
}

export async function serveHealthPort(host: string, port: number, info: { version: string }): Promise<HealthPort> {
  const started = Date.now();
  let ready = false;
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, { error: "Method Not Allowed" });
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/health/live") return send(200, { status: "Live" });
    if (path === "/health/ready") return send(ready ? 200 : 503, { status: ready ? "Ready" : "NotReady" });
    if (path === "/health") {
      return send(ready ? 200 : 503, {
        status: ready ? "Healthy" : "Unhealthy",
        version: info.version,
        uptimeSeconds: Math.floor((Date.now() - started) / 1000),
        pid: process.pid,
      });
    }
    send(404, { error: "Not Found" });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    setReady: (value) => {
      ready = value;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
