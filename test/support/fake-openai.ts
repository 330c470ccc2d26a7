// A chat-completions server on loopback speaking OpenAI's wire protocol, for the provider tests:
// `POST {prefix}/chat/completions` streams `chat.completion.chunk` objects as SSE (a role chunk,
// content deltas, tool calls in fragments by index, a finish chunk, the `include_usage` chunk with
// empty choices, `data: [DONE]`), a whole JSON completion when `stream` is false, and
// `GET {prefix}/models`. Replies are scripted per request: statuses (500s), sockets dropped
// mid-stream, empty replies, slow or hanging streams. Every request is recorded, and the requests
// whose client went away before the answer ended are counted.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";

export interface RecordedOpenAiRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON body, or the raw text when it is not JSON; undefined for a GET. */
  body: unknown;
}

export interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments: string;
}

export type ScriptedReply =
  /** A 200 reply: content pieces (each a delta), tool calls (arguments cut in `fragment`-character pieces). */
  | {
      kind: "reply";
      content?: string[];
      toolCalls?: ScriptedToolCall[];
      /** Arguments piece size (default 4). */
      fragment?: number;
      /** Send the calls' fragments round-robin rather than call after call. */
      interleave?: boolean;
      finishReason?: string;
      usage?: { prompt_tokens: number; completion_tokens: number };
      /** Wait this long before each event (a slow stream). */
      delayMs?: number;
      /** Write each event in pieces of this many bytes, waiting for each to leave (chunks split across reads). */
      splitBytes?: number;
      /** Put `: keep-alive` comments between events and end lines with CRLF. */
      comments?: boolean;
      /** Answer only once this settles (a reply held until the test lets it go). */
      waitFor?: Promise<unknown>;
    }
  /** An HTTP error with an OpenAI-shaped error body. */
  | { kind: "status"; status: number }
  /** Stream these deltas, then destroy the socket without ending the response. */
  | { kind: "drop"; content?: string[] }
  /** A 200 stream with a role chunk, a finish chunk and [DONE], but no content and no tool call. */
  | { kind: "empty" }
  /** Stream these deltas, then keep the response open until the client goes away. */
  | { kind: "hang"; content?: string[] };

export interface FakeOpenAiOptions {
  /** The path the API lives under: `/v1` (default), `` for an assistant API. */
  prefix?: string;
  /** The bearer key accepted; a random sk- key by default. */
  apiKey?: string;
  /** Replaces the key check: answers whether the Authorization header may pass. */
  authorize?: (authorization: string | undefined) => boolean;
  models?: string[];
  /** Serve HTTPS with this key and certificate (e.g. a self-signed one). */
  tls?: { key: string; cert: string };
}

export interface FakeOpenAi {
  /** The base URL clients are given (`http://127.0.0.1:<port>/v1`). */
  url: string;
  apiKey: string;
  requests: RecordedOpenAiRequest[];
  /** The chat requests whose client closed the connection before the answer was complete. */
  closedEarly: number;
  /** Connections accepted so far (a client that keeps its connection alive opens one). */
  connections: number;
  /** Replies for the next chat requests, in order; once used up, each request gets `fallback`. */
  script: ScriptedReply[];
  fallback: ScriptedReply;
  /** The ids `GET /models` lists. */
  models: string[];
  /** A status `GET /models` answers with, until set back to undefined. */
  modelsStatus: number | undefined;
  chatRequests(): RecordedOpenAiRequest[];
  close(): Promise<void>;
}

export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const prefix = options.prefix ?? "/v1";
  const apiKey = options.apiKey ?? `sk-test-${randomBytes(16).toString("hex")}`;
  const authorize = options.authorize ?? ((authorization) => authorization === `Bearer ${apiKey}`);
  const sockets = new Set<Socket>();

  const fake: FakeOpenAi = {
    url: "",
    apiKey,
    requests: [],
    closedEarly: 0,
    connections: 0,
    script: [],
    fallback: { kind: "reply", content: ["Hello", " from", " the", " fake", "."] },
    models: options.models ?? ["gpt-4o-mini", "gpt-4o"],
    modelsStatus: undefined,
    chatRequests: () => fake.requests.filter((r) => r.path === `${prefix}/chat/completions`),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const listener: RequestListener = (req, res) => {
    void handle(req, res).catch(() => res.destroy());
  };
  const server = options.tls ? createTlsServer(options.tls, listener) : createServer(listener);
  server.on(options.tls ? "secureConnection" : "connection", (socket: Socket) => {
    sockets.add(socket);
    fake.connections++;
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    if (text !== "") {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const path = (req.url ?? "/").split("?")[0]!;
    fake.requests.push({ method: req.method ?? "", path, headers: { ...req.headers }, body });

    if (!authorize(req.headers.authorization)) {
      // OpenAI echoes a masked key in this message: a client must not pass it on.
      const shown = String(req.headers.authorization ?? "").replace(/^Bearer /, "");
      return json(res, 401, {
        error: {
          message: `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      });
    }
    if (req.method === "GET" && path === `${prefix}/models`) {
      if (fake.modelsStatus !== undefined) return errorStatus(res, fake.modelsStatus);
      return json(res, 200, {
        object: "list",
        data: fake.models.map((id) => ({ id, object: "model", created: 1_715_367_049, owned_by: "system" })),
      });
    }
    if (req.method === "POST" && path === `${prefix}/chat/completions`) {
      const request = (typeof body === "object" && body !== null ? body : {}) as { model?: string; stream?: boolean };
      const reply = fake.script.shift() ?? fake.fallback;
      return chat(res, reply, request.model ?? "gpt-4o-mini", request.stream === true);
    }
    return json(res, 404, {
      error: { message: `Invalid URL (${req.method} ${path})`, type: "invalid_request_error", param: null, code: null },
    });
  }

  async function chat(res: ServerResponse, reply: ScriptedReply, model: string, stream: boolean): Promise<void> {
    let finished = false;
    res.on("close", () => {
      if (!finished) fake.closedEarly++;
    });
    if (reply.kind === "status") {
      finished = true;
      return errorStatus(res, reply.status);
    }
    if (reply.kind === "reply" && reply.waitFor) await reply.waitFor.catch(() => undefined);
    const id = `chatcmpl-${randomBytes(12).toString("base64url")}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      system_fingerprint: "fp_fake",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      usage: null,
    });
    const contents = reply.kind === "empty" ? [] : (reply.content ?? []);
    const calls =
      reply.kind === "reply"
        ? (reply.toolCalls ?? []).map((c, i) => ({ ...c, id: c.id ?? `call_${i}_${randomBytes(6).toString("hex")}` }))
        : [];
    const usage =
      reply.kind === "reply" && reply.usage ? reply.usage : { prompt_tokens: 17, completion_tokens: contents.length + calls.length };
    const finishReason = reply.kind === "reply" && reply.finishReason ? reply.finishReason : calls.length ? "tool_calls" : "stop";

    if (!stream) {
      finished = true;
      return json(res, 200, {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: contents.length ? contents.join("") : null,
              refusal: null,
              ...(calls.length
                ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) }
                : {}),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }

    const options: { comments?: boolean; delayMs?: number; splitBytes?: number } = reply.kind === "reply" ? reply : {};
    const eol = options.comments ? "\r\n" : "\n";
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
    const emit = async (data: string) => {
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (res.destroyed) throw new Error("client gone");
      const text = `${options.comments ? `: keep-alive${eol}` : ""}data: ${data}${eol}${eol}`;
      if (!options.splitBytes) {
        // Waiting for the write to leave keeps a drop that follows from swallowing it.
        await new Promise<void>((resolve, reject) => res.write(text, (e) => (e ? reject(e) : resolve())));
        return;
      }
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; at += options.splitBytes) {
        await new Promise<void>((resolve, reject) =>
          res.write(bytes.subarray(at, at + options.splitBytes!), (e) => (e ? reject(e) : resolve())),
        );
        await new Promise((resolve) => setImmediate(resolve));
      }
    };

    await emit(JSON.stringify(chunk({ role: "assistant", content: "", refusal: null })));
    for (const content of contents) await emit(JSON.stringify(chunk({ content })));
    if (reply.kind === "drop") {
      finished = true;
      res.socket?.destroy();
      return;
    }
    if (reply.kind === "hang") return; // open until the client goes away (counted by the close listener)

    const fragmentSize = reply.kind === "reply" ? (reply.fragment ?? 4) : 4;
    const perCall = calls.map((call, index) => {
      const pieces: Record<string, unknown>[] = [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }];
      for (let at = 0; at < call.arguments.length; at += fragmentSize)
        pieces.push({ index, function: { arguments: call.arguments.slice(at, at + fragmentSize) } });
      return pieces;
    });
    const fragments: Record<string, unknown>[] = [];
    if (reply.kind === "reply" && reply.interleave) {
      for (let round = 0; perCall.some((p) => round < p.length); round++)
        for (const pieces of perCall) if (pieces[round]) fragments.push(pieces[round]!);
    } else for (const pieces of perCall) fragments.push(...pieces);
    for (const fragment of fragments) await emit(JSON.stringify(chunk({ tool_calls: [fragment] })));

    await emit(JSON.stringify(chunk({}, finishReason)));
    await emit(
      JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        system_fingerprint: "fp_fake",
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
    );
    await emit("[DONE]");
    finished = true;
    res.end();
  }

  function errorStatus(res: ServerResponse, status: number): void {
    json(res, status, {
      error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null },
    });
  }

  function json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `${options.tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`;
  return fake;
}
