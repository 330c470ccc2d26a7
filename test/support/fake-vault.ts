// A Vault server on loopback speaking the KV version 2 HTTP API, for the credential store's tests:
// one engine at `mount` (default `secret`), `X-Vault-Token` checked on every request (403
// `{"errors":["permission denied"]}` otherwise), versions kept per secret.
//   GET|POST|PUT     /v1/{mount}/data/{path}      read the latest version / write a new one ({ data })
//   DELETE           /v1/{mount}/data/{path}      soft-delete the latest version (a later read is 404)
//   LIST, or GET ?list=true  /v1/{mount}/metadata/{folder}[/]  → { data: { keys } } (sub-folders as `x/`), 404 when empty
//   GET|DELETE       /v1/{mount}/metadata/{path}  the metadata / every version and the metadata (204)
// Any other path is 404 `{"errors":["no handler for route ..."]}`, as Vault answers a path no engine
// is mounted at. Node's HTTP server refuses the LIST method that Vault accepts, so this is a small
// HTTP/1.1 server on node:net (Content-Length bodies, keep-alive). `sealed` answers 503 "Vault is
// sealed" to everything; `hang` accepts requests and never answers. Every request is recorded.
import { randomBytes } from "node:crypto";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface VaultRequest {
  method: string;
  /** The path as sent (percent-encoded), without the query. */
  path: string;
  query: string;
  /** The X-Vault-Token header as received. */
  token: string | undefined;
  headers: Record<string, string>;
  body: string;
}

interface StoredSecret {
  versions: { data: Record<string, unknown>; created: string; deleted?: string }[];
}

export interface FakeVault {
  url: string;
  token: string;
  mount: string;
  requests: VaultRequest[];
  /** Secrets by their path under the mount (decoded, no leading slash). */
  secrets: Map<string, StoredSecret>;
  /** The latest live version's data of a secret, for assertions. */
  read(path: string): Record<string, unknown> | undefined;
  /** Stores a secret as a write through the API would. */
  write(path: string, data: Record<string, unknown>): void;
  sealed: boolean;
  hang: boolean;
  close(): Promise<void>;
}

export async function startFakeVault(options: { token?: string; mount?: string } = {}): Promise<FakeVault> {
  const token = options.token ?? `hvs.${randomBytes(18).toString("base64url")}`;
  const mount = (options.mount ?? "secret").replace(/^\/+|\/+$/g, "");
  const requests: VaultRequest[] = [];
  const secrets = new Map<string, StoredSecret>();
  const sockets = new Set<Socket>();

  const latest = (path: string) => {
    const secret = secrets.get(path);
    const version = secret?.versions.at(-1);
    return version && !version.deleted ? { secret: secret!, version, number: secret!.versions.length } : undefined;
  };
  const write = (path: string, data: Record<string, unknown>) => {
    const secret = secrets.get(path) ?? { versions: [] };
    secret.versions.push({ data, created: new Date().toISOString() });
    secrets.set(path, secret);
    return secret.versions.length;
  };
  const envelope = (data: unknown) => ({
    request_id: crypto.randomUUID(),
    lease_id: "",
    renewable: false,
    lease_duration: 0,
    data,
    wrap_info: null,
    warnings: null,
    auth: null,
    mount_type: "kv",
  });
  const versionMetadata = (path: string, n: number) => {
    const v = secrets.get(path)!.versions[n - 1]!;
    return { created_time: v.created, custom_metadata: null, deletion_time: v.deleted ?? "", destroyed: false, version: n };
  };

  function route(request: VaultRequest, fake: FakeVault): { status: number; body?: unknown } {
    if (fake.sealed) return { status: 503, body: { errors: ["Vault is sealed"] } };
    if (request.token !== token) return { status: 403, body: { errors: ["permission denied"] } };
    const list = request.method === "LIST" || (request.method === "GET" && new URLSearchParams(request.query).get("list") === "true");
    const prefix = `/v1/${mount}/`;
    let rest: string;
    try {
      rest = decodeURIComponent(request.path);
    } catch {
      return { status: 400, body: { errors: ["invalid path"] } };
    }
    const noRoute = { status: 404, body: { errors: [`no handler for route "${rest.replace(/^\/v1\//, "")}". route entry not found.`] } };
    if (!rest.startsWith(prefix)) return noRoute;
    rest = rest.slice(prefix.length);
    const kind = rest.startsWith("data/") ? "data" : rest.startsWith("metadata/") || rest === "metadata" ? "metadata" : undefined;
    if (!kind) return noRoute;
    const path = rest.slice(kind.length + 1).replace(/^\/+/, "");

    if (kind === "metadata" && list) {
      const folder = path === "" ? "" : `${path.replace(/\/+$/, "")}/`;
      const keys = new Set<string>();
      for (const [name, secret] of secrets) {
        if (!name.startsWith(folder) || secret.versions.length === 0) continue;
        const tail = name.slice(folder.length);
        keys.add(tail.includes("/") ? `${tail.slice(0, tail.indexOf("/"))}/` : tail);
      }
      if (keys.size === 0) return { status: 404, body: { errors: [] } };
      return { status: 200, body: envelope({ keys: [...keys].sort() }) };
    }
    if (path === "" || path.endsWith("/")) return { status: 405, body: { errors: ["unsupported operation"] } };
    if (kind === "data") {
      if (request.method === "GET") {
        const found = latest(path);
        if (!found) return { status: 404, body: { errors: [] } };
        return { status: 200, body: envelope({ data: found.version.data, metadata: versionMetadata(path, found.number) }) };
      }
      if (request.method === "POST" || request.method === "PUT") {
        let parsed: { data?: unknown };
        try {
          parsed = JSON.parse(request.body) as { data?: unknown };
        } catch {
          return { status: 400, body: { errors: ["failed to parse JSON input"] } };
        }
        if (!parsed.data || typeof parsed.data !== "object" || Array.isArray(parsed.data)) {
          return { status: 400, body: { errors: ["no data provided"] } };
        }
        const n = write(path, parsed.data as Record<string, unknown>);
        const { deletion_time, ...meta } = versionMetadata(path, n);
        return { status: 200, body: envelope({ ...meta, deletion_time }) };
      }
      if (request.method === "DELETE") {
        const found = latest(path);
        if (found) found.version.deleted = new Date().toISOString();
        return { status: 204 };
      }
      return { status: 405, body: { errors: ["unsupported operation"] } };
    }
    // metadata of one secret
    if (request.method === "GET") {
      const secret = secrets.get(path);
      if (!secret || secret.versions.length === 0) return { status: 404, body: { errors: [] } };
      const versions = Object.fromEntries(secret.versions.map((_, i) => [String(i + 1), versionMetadata(path, i + 1)]));
      return {
        status: 200,
        body: envelope({
          current_version: secret.versions.length,
          oldest_version: 1,
          max_versions: 0,
          cas_required: false,
          created_time: secret.versions[0]!.created,
          updated_time: secret.versions.at(-1)!.created,
          versions,
        }),
      };
    }
    if (request.method === "DELETE") {
      secrets.delete(path);
      return { status: 204 };
    }
    return { status: 405, body: { errors: ["unsupported operation"] } };
  }

  const reasons: Record<number, string> = {
    200: "OK",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffer = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString("latin1").split("\r\n");
        const [method = "", target = ""] = head[0]!.split(" ");
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const colon = line.indexOf(":");
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        if (headers["transfer-encoding"]) {
          socket.end("HTTP/1.1 411 Length Required\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
          return;
        }
        const length = Number(headers["content-length"] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.subarray(end + 4, end + 4 + length).toString("utf8");
        buffer = buffer.subarray(end + 4 + length);
        const q = target.indexOf("?");
        const request: VaultRequest = {
          method,
          path: q < 0 ? target : target.slice(0, q),
          query: q < 0 ? "" : target.slice(q + 1),
          token: headers["x-vault-token"],
          headers,
          body,
        };
        requests.push(request);
        if (fake.hang) continue;
        const answer = route(request, fake);
        const text = answer.body === undefined ? "" : JSON.stringify(answer.body);
        const lines = [
          `HTTP/1.1 ${answer.status} ${reasons[answer.status] ?? "Error"}`,
          "Cache-Control: no-store",
          ...(text ? ["Content-Type: application/json"] : []),
          `Content-Length: ${Buffer.byteLength(text)}`,
          `Date: ${new Date().toUTCString()}`,
        ];
        socket.write(`${lines.join("\r\n")}\r\n\r\n${text}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const fake: FakeVault = {
    url: `http://127.0.0.1:${port}`,
    token,
    mount,
    requests,
    secrets,
    read: (path) => latest(path)?.version.data,
    write: (path, data) => void write(path, data),
    sealed: false,
    hang: false,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return fake;
}
