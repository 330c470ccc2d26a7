// signal-cli's HTTP daemon (`signal-cli daemon --http`) on loopback, as the Signal channel tests
// need it: GET /api/v1/check (200, or a scripted status), GET /api/v1/events as Server-Sent Events
// (`id`, `event: receive`, `data: { envelope, account }` as signal-cli sends them; the
// Last-Event-ID header of each stream request is recorded), and JSON-RPC 2.0 on POST /api/v1/rpc
// (`send` with recipient or groupId answers `{ timestamp, results }`; other methods -32601).
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface SignalReceiveInput {
  source: string;
  text?: string;
  groupId?: string;
}

export interface FakeSignal {
  url: string;
  account: string;
  /** A status the check and events answer instead of 200, until set back to undefined. */
  status: number | undefined;
  /** Sends a `receive` event to every open stream; answers its event id. */
  receive(input: SignalReceiveInput): string;
  /** Ends every open event stream (a daemon restart, a lost connection). */
  dropStreams(): void;
  /** The Last-Event-ID header of each events request, in order (undefined: none). */
  streamRequests: (string | undefined)[];
  openStreams(): number;
  /** Every `send` call's params. */
  sent: { account?: string; recipient?: string[]; groupId?: string; message: string }[];
  close(): Promise<void>;
}

export async function startFakeSignal(account = "+15550000000"): Promise<FakeSignal> {
  const streams = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let nextId = 1;
  const fake: FakeSignal = {
    url: "",
    account,
    status: undefined,
    streamRequests: [],
    sent: [],
    receive(input) {
      const id = String(nextId++);
      const timestamp = Date.now();
      const envelope = {
        source: input.source,
        sourceNumber: input.source.startsWith("+") ? input.source : null,
        sourceUuid: "6b4e1d2c-0000-4000-8000-000000000001",
        sourceDevice: 1,
        timestamp,
        ...(input.text === undefined
          ? { typingMessage: { action: "STARTED", timestamp } }
          : {
              dataMessage: {
                timestamp,
                message: input.text,
                expiresInSeconds: 0,
                viewOnce: false,
                ...(input.groupId ? { groupInfo: { groupId: input.groupId, type: "DELIVER" } } : {}),
              },
            }),
      };
      const frame = `id: ${id}\nevent: receive\ndata: ${JSON.stringify({ envelope, account })}\n\n`;
      for (const res of streams) res.write(frame);
      return id;
    },
    dropStreams() {
      for (const res of streams) res.end();
      streams.clear();
    },
    openStreams: () => streams.size,
    async close() {
      for (const res of streams) res.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (req.method === "GET" && path === "/api/v1/check") {
      res.writeHead(fake.status ?? 200);
      res.end();
      return;
    }
    if (req.method === "GET" && path === "/api/v1/events") {
      const last = req.headers["last-event-id"];
      fake.streamRequests.push(typeof last === "string" ? last : undefined);
      if (fake.status !== undefined) {
        res.writeHead(fake.status);
        res.end();
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(": signal-cli events\n\n");
      streams.add(res);
      res.on("close", () => streams.delete(res));
      return;
    }
    if (req.method === "POST" && path === "/api/v1/rpc") {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        let call: { jsonrpc?: string; method?: string; params?: Record<string, unknown>; id?: unknown };
        try {
          call = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          return json(res, 200, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
        }
        if (call.method !== "send")
          return json(res, 200, { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: call.id });
        const params = call.params ?? {};
        if (typeof params.message !== "string" || (!Array.isArray(params.recipient) && typeof params.groupId !== "string")) {
          return json(res, 200, { jsonrpc: "2.0", error: { code: -32602, message: "Invalid params" }, id: call.id });
        }
        fake.sent.push(params as FakeSignal["sent"][number]);
        const timestamp = Date.now();
        return json(res, 200, { jsonrpc: "2.0", result: { timestamp, results: [{ type: "SUCCESS" }] }, id: call.id });
      });
      return;
    }
    json(res, 404, { error: "not found" });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
