// Test harness: the two test services behind in-process fronts, with every call captured and
// every answer scripted per request (keyed by X-Request-Id, so tests can run concurrently).
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { create, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { createFront, type Front, type FrontOptions, type GatewayLogger } from "../../gateway/index.js";
import { InventoryService, LibraryService } from "../gen/meshwork/testing/v1/transcoding_pb.js";

/** What a service saw. */
export interface Captured {
  readonly rpc: string;
  readonly input: Message;
  readonly headers: Headers;
  readonly signal: AbortSignal;
}

/**
 * Scripts the service's answer: a message (init shape) for unary methods, an iterable for
 * streams; throwing makes the call fail.
 */
export type Responder = (input: Message, ctx: HandlerContext) => unknown;

export interface LogEntry {
  readonly level: "info" | "warn" | "error";
  readonly obj: Record<string, unknown>;
  readonly msg: string | undefined;
}

export interface HttpExchange {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The parsed body; undefined when empty. */
  readonly json: unknown;
  /** The call the service saw, if any. */
  readonly call: Captured | undefined;
}

export interface SendOptions {
  readonly method: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** Serialized as JSON with Content-Type application/json unless headers say otherwise. */
  readonly body?: unknown;
  /** Sent as is; no Content-Type added. */
  readonly rawBody?: string | Buffer;
  /** Leave X-Request-Id out (the harness sets one otherwise). */
  readonly noRequestId?: boolean;
  readonly respond?: Responder;
}

export interface Harness {
  readonly logs: LogEntry[];
  readonly fronts: Readonly<Record<"library" | "inventory", Front>>;
  send(front: "library" | "inventory", options: SendOptions): Promise<HttpExchange>;
  port(front: "library" | "inventory"): number;
  /** Registers a responder for a request id the test sends by other means. */
  script(requestId: string, respond: Responder): void;
  captured(requestId: string): Captured | undefined;
  close(): Promise<void>;
}

export function captureLogger(logs: LogEntry[]): GatewayLogger {
  const logger: GatewayLogger = {
    info: (obj, msg) => logs.push({ level: "info", obj: obj as Record<string, unknown>, msg }),
    warn: (obj, msg) => logs.push({ level: "warn", obj: obj as Record<string, unknown>, msg }),
    error: (obj, msg) => logs.push({ level: "error", obj: obj as Record<string, unknown>, msg }),
    child: () => logger,
  };
  return logger;
}

export type HarnessOptions = Pick<FrontOptions, "bodyLimitBytes" | "forwardHeaders" | "streamFramers" | "sseKeepAliveSeconds">;

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const responders = new Map<string, Responder>();
  const calls = new Map<string, Captured>();
  const logs: LogEntry[] = [];

  const implement = (service: DescService) => {
    const impl: Record<string, unknown> = {};
    for (const method of service.methods) impl[method.localName] = handlerFor(method);
    return impl;
  };
  const handlerFor = (method: DescMethod) => {
    const answer = (input: Message, ctx: HandlerContext) => {
      const id = ctx.requestHeader.get("x-request-id") ?? "";
      calls.set(id, { rpc: method.name, input, headers: ctx.requestHeader, signal: ctx.signal });
      const respond = responders.get(id);
      return respond ? respond(input, ctx) : undefined;
    };
    if (method.methodKind === "server_streaming") {
      return async function* (input: Message, ctx: HandlerContext) {
        const out = answer(input, ctx);
        if (out) yield* out as AsyncIterable<unknown>;
      };
    }
    return async (input: Message, ctx: HandlerContext) => create(method.output, ((await answer(input, ctx)) ?? {}) as never);
  };

  const transport = createRouterTransport((router) => {
    router.service(LibraryService, implement(LibraryService) as never);
    router.service(InventoryService, implement(InventoryService) as never);
  });
  const logger = captureLogger(logs);
  const fronts: Record<"library" | "inventory", Front> = {
    library: createFront({
      name: "library",
      host: "127.0.0.1",
      port: 0,
      services: [LibraryService],
      transport,
      logger,
      ...options,
    }),
    inventory: createFront({
      name: "inventory",
      host: "127.0.0.1",
      port: 0,
      services: [InventoryService],
      transport,
      logger,
      ...options,
    }),
  };
  const ports = {
    library: (await fronts.library.listen()).port,
    inventory: (await fronts.inventory.listen()).port,
  };

  return {
    logs,
    fronts,
    port: (front) => ports[front],
    script: (id, respond) => void responders.set(id, respond),
    captured: (id) => calls.get(id),
    async send(front, opts) {
      const headers: Record<string, string> = {};
      let payload: Buffer | undefined;
      if (opts.body !== undefined) {
        payload = Buffer.from(JSON.stringify(opts.body));
        headers["content-type"] = "application/json";
      } else if (opts.rawBody !== undefined) {
        payload = Buffer.from(opts.rawBody);
      }
      if (payload) headers["content-length"] = String(payload.length);
      let requestId: string | undefined;
      if (!opts.noRequestId) headers["x-request-id"] = requestId = randomUUID();
      Object.assign(headers, opts.headers);
      requestId = headers["x-request-id"] ?? requestId;
      if (opts.respond && requestId) responders.set(requestId, opts.respond);
      const res = await exchange(ports[front], opts.method, opts.path, headers, payload);
      const echoed = res.headers["x-request-id"];
      const call = typeof echoed === "string" ? calls.get(echoed) : undefined;
      return { ...res, call };
    },
    async close() {
      await Promise.all([fronts.library.close(), fronts.inventory.close()]);
    },
  };
}

/** A plain HTTP/1.1 exchange with node:http, so nothing rewrites methods or headers. */
export function exchange(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
): Promise<Omit<HttpExchange, "call">> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        const type = String(res.headers["content-type"]);
        if (text !== "" && /json/.test(type) && !type.includes("ndjson")) json = JSON.parse(text);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}
