// The plain `GET <hub>` form of a hub's event stream: `text/event-stream`, one frame per message
// of the bound rpc (`event:` and `id:` from the fields the contract names, `data:` the message's
// JSON). The hub's connect rpc admits the request first, so a refused key is answered with its own
// status before the stream commits to 200; a later failure is the stream's last frame, `event: error`.
import type { IncomingMessage, ServerResponse } from "node:http";
import { create, type Message } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import type { GatewayLogger } from "../logger.js";
import { SSE_HEADERS } from "../streams/sse-framer.js";
import { createKeepAlive, type KeepAlive } from "../streams/sse-keep-alive.js";
import type { CompiledHub, HubEventStreamPlan } from "./hub-table.js";

export interface HubEventStreamRequest {
  readonly hub: CompiledHub;
  readonly plan: HubEventStreamPlan;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly headers: Record<string, string>;
  readonly transport: Transport;
  readonly logger: GatewayLogger;
  /** Aborted when the client goes away or the front closes. */
  readonly abort: AbortController;
  readonly keepAliveMs: number;
  admit(headers: Record<string, string>, signal: AbortSignal): Promise<unknown>;
  errorAnswer(reason: unknown): {
    status: number;
    headers: Readonly<Record<string, string>> | undefined;
    contentType: string;
    body: string;
    error: { detail: string };
  };
}

const keepAlives = new Map<number, KeepAlive>();

const NOT_IN_FIELD = /[\r\n\0]/g;

export async function serveHubEventStream(r: HubEventStreamRequest): Promise<void> {
  const { res, plan, abort } = r;
  res.once("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  let keepAlive = keepAlives.get(r.keepAliveMs);
  if (!keepAlive) keepAlives.set(r.keepAliveMs, (keepAlive = createKeepAlive(r.keepAliveMs)));
  let entry: ReturnType<KeepAlive["add"]> | undefined;
  try {
    await r.admit(r.headers, abort.signal);
    // Admitted: the stream is open from here, whether or not the service has anything to say yet
    // (a stream's headers may travel with its first message).
    res.writeHead(200, { ...SSE_HEADERS, "x-request-id": r.requestId });
    res.write(": connected\n\n");
    entry = keepAlive.add(res);
    const response = await r.transport.stream(plan.method as never, abort.signal, undefined, r.headers, single(create(plan.method.input)));
    for await (const next of response.message) {
      let frames = "";
      for (const item of plan.itemsOf(next as Message)) frames += frameOf(plan, item);
      if (frames === "") continue;
      entry.touch();
      if (!res.write(frames)) await drained(res);
      if (abort.signal.aborted) break;
    }
    res.end();
  } catch (e) {
    if (abort.signal.aborted || res.destroyed) return;
    const answer = r.errorAnswer(e);
    if (answer.status >= 500) {
      r.logger.error(
        { hub: r.hub.path, rpc: plan.label, status: answer.status, err: e instanceof Error ? e.message : String(e) },
        "hub event stream failed",
      );
    }
    if (res.headersSent) {
      res.end(`event: error\ndata: ${answer.body}\n\n`);
    } else {
      res.writeHead(answer.status, {
        ...answer.headers,
        "content-type": answer.contentType,
        "content-length": Buffer.byteLength(answer.body),
        "x-request-id": r.requestId,
      });
      res.end(answer.body);
    }
  } finally {
    entry?.remove();
  }
}

// A frozen message (one instance handed to every stream) is framed once for all of them.
const framed = new WeakMap<HubEventStreamPlan, WeakMap<Message, string>>();

function frameOf(plan: HubEventStreamPlan, item: Message): string {
  const frozen = Object.isFrozen(item);
  let cache = frozen ? framed.get(plan) : undefined;
  const known = cache?.get(item);
  if (known !== undefined) return known;
  const message = item as Message & Record<string, unknown>;
  let frame = "";
  if (plan.eventField) frame += `event: ${String(message[plan.eventField.localName]).replace(NOT_IN_FIELD, "")}\n`;
  if (plan.idField) frame += `id: ${String(message[plan.idField.localName]).replace(NOT_IN_FIELD, "")}\n`;
  frame += `data: ${JSON.stringify(plan.toJson(message))}\n\n`;
  if (frozen) {
    if (cache === undefined) framed.set(plan, (cache = new WeakMap()));
    cache.set(item, frame);
  }
  return frame;
}

async function* single(message: Message) {
  yield message;
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
