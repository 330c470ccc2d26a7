// The OpenAI chat-completions protocol both provider kinds speak: a streamed POST
// {base}/chat/completions (stream, include_usage), SSE chunks assembled into the reply, GET
// {base}/models, and the retry rules: 5xx and socket errors (a drop mid-stream included) retried 3
// times after retryBaseMs × 2^n, an empty reply once, a 401 once when the credentials can be renewed.
import type { IncomingMessage } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { ProviderCancelledError, ProviderError, TransientProviderError as Transient } from "./errors.js";
import { createProviderAgents, discard, type ProviderAgents, readBody, send, socketCode } from "./http-request.js";
import { isObject, ReplyAssembler } from "./reply-assembler.js";
import { SseParser } from "./sse-parser.js";
import type { ChatOptions, ChatRequest, ChatResult, DeltaListener, ProviderClient, ProviderKind } from "./types.js";

/** Where and how to call: the base URL (ending `/v1` or the assistant's api) and the headers carrying credentials. */
export interface ProviderEndpoint {
  baseUrl: string;
  headers: Record<string, string>;
}

export interface ChatCompletionsClientOptions {
  name: string;
  kind: ProviderKind;
  /** Resolved before every attempt (a key may change on reload, an exchanged token may expire). */
  endpoint(signal: AbortSignal | undefined): Promise<ProviderEndpoint>;
  /** Called on a 401 when set, with the endpoint that was refused: its credentials are dropped and the call is made again, exactly once. */
  renewCredentials?: (refused: ProviderEndpoint) => void;
  /** `AgentGateway:ProviderRetryBaseMs` (2000). */
  retryBaseMs?: number;
  /** Transient failures retried after the first attempt (3). */
  maxRetries?: number;
  /** `DangerouslyDisableSslValidation`: this client's requests only. */
  disableTlsValidation?: boolean;
  /** Connections shared with the provider's other requests (the assistant's token exchange); made here when absent. */
  agents?: ProviderAgents;
}

export interface ChatCompletionsClient extends ProviderClient {
  /** Closes the client's kept-alive connections. */
  close(): void;
}

export function createChatCompletionsClient(options: ChatCompletionsClientOptions): ChatCompletionsClient {
  const { name, kind } = options;
  const retryBaseMs = options.retryBaseMs ?? 2000;
  const maxRetries = options.maxRetries ?? 3;
  const agents = options.agents ?? createProviderAgents({ rejectUnauthorized: !options.disableTlsValidation });

  function cancelled(signal: AbortSignal | undefined, error: unknown): never {
    if (error instanceof ProviderError) throw error;
    if (signal?.aborted) throw new ProviderCancelledError(name, signal.reason);
    throw error;
  }

  async function open(
    path: string,
    init: { method: "GET" | "POST"; body?: string; accept: string },
    signal: AbortSignal | undefined,
  ): Promise<{ response: IncomingMessage; what: string; endpoint: ProviderEndpoint }> {
    const endpoint = await options.endpoint(signal);
    const url = new URL(`${endpoint.baseUrl.replace(/\/+$/, "")}${path}`);
    const what = `${init.method} ${url.pathname}`;
    const headers: Record<string, string> = { ...endpoint.headers, accept: init.accept };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    try {
      return { response: await send(url, { method: init.method, headers, body: init.body, signal, agents }), what, endpoint };
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new Transient("unreachable", `${what} unreachable (${socketCode(error)})`);
    }
  }

  // Reads one streamed (or, from servers that ignore `stream`, whole JSON) reply into the assembler.
  async function readReply(
    response: IncomingMessage,
    what: string,
    assembler: ReplyAssembler,
    onContent: (content: string) => void,
  ): Promise<void> {
    const type = String(response.headers["content-type"] ?? "");
    try {
      if (type.includes("application/json")) {
        const text = await readBody(response);
        if (text.trim() !== "") {
          const object: unknown = JSON.parse(text);
          const content = assembler.take(object);
          if (content) onContent(content);
        }
        return;
      }
      const parser = new SseParser();
      let finished = false;
      for await (const chunk of response as AsyncIterable<Buffer>) {
        if (finished) continue;
        for (const event of parser.push(chunk)) {
          finished = handle(event.data);
          if (finished) break;
        }
        // The reply is whole. Leaving the loop destroys the response and with it the connection:
        // when the rest of the HTTP message is already in, it is read to its end instead (no wait),
        // so the connection goes back to the keep-alive pool for the next turn.
        if (finished && !response.complete) return;
      }
      if (finished) return;
      for (const event of parser.end()) if (handle(event.data)) return;
    } catch (error) {
      if (error instanceof Transient || error instanceof ProviderError) throw error;
      if (error instanceof SyntaxError)
        throw new ProviderError(name, "bad_reply", `provider ${name}: ${what} answered a chunk that is not JSON`, response.statusCode);
      throw new Transient("unreachable", `${what} stream broken (${socketCode(error)})`);
    }

    function handle(data: string): boolean {
      if (data === "[DONE]") {
        discard(response);
        return true;
      }
      const chunk: unknown = JSON.parse(data);
      if (isObject(chunk) && isObject(chunk.error)) throw new Transient("server_error", `${what} sent an error event mid-stream`);
      const content = assembler.take(chunk);
      if (content) onContent(content);
      return false;
    }
  }

  async function chat(request: ChatRequest, onDelta?: DeltaListener, chatOptions: ChatOptions = {}): Promise<ChatResult> {
    const { signal } = request;
    const body = JSON.stringify({
      model: request.model,
      messages: request.messages,
      ...(request.tools?.length ? { tools: request.tools } : {}),
      stream: true,
      stream_options: { include_usage: true },
    });
    let attempt = 0;
    let retries = 0;
    let emptyRetried = false;
    let renewed = false;
    for (;;) {
      attempt++;
      signal?.throwIfAborted();
      try {
        const { response, what, endpoint } = await open("/chat/completions", { method: "POST", body, accept: "text/event-stream" }, signal);
        const status = response.statusCode ?? 0;
        if (status === 401 && options.renewCredentials && !renewed) {
          discard(response);
          renewed = true;
          options.renewCredentials(endpoint);
          chatOptions.onRetry?.({ attempt, reason: "unauthorized", status, delayMs: 0 });
          continue;
        }
        if (status >= 500) {
          discard(response);
          throw new Transient("server_error", `${what} answered ${status}`, status);
        }
        if (status < 200 || status >= 300) {
          discard(response);
          const reason = status === 401 || status === 403 ? "unauthorized" : "refused";
          throw new ProviderError(name, reason, `provider ${name}: ${what} answered ${status}`, status, attempt);
        }
        const assembler = new ReplyAssembler();
        const current = attempt;
        await readReply(response, what, assembler, (content) => onDelta?.({ content, attempt: current }));
        if (assembler.empty) {
          if (!emptyRetried) {
            emptyRetried = true;
            chatOptions.onRetry?.({ attempt, reason: "empty_reply", status, delayMs: 0 });
            continue;
          }
          throw new ProviderError(name, "empty_reply", `provider ${name}: ${what} answered an empty reply twice`, status, attempt);
        }
        return assembler.result(request.model, attempt);
      } catch (error) {
        if (!(error instanceof Transient)) cancelled(signal, error);
        const transient = error as Transient;
        if (retries >= maxRetries) {
          throw new ProviderError(
            name,
            transient.reason,
            `provider ${name}: ${transient.detail} after ${attempt} attempts`,
            transient.status,
            attempt,
          );
        }
        const delayMs = retryBaseMs * 2 ** retries;
        retries++;
        chatOptions.onRetry?.({ attempt, reason: transient.reason, status: transient.status, delayMs });
        try {
          await sleep(delayMs, undefined, { signal });
        } catch (sleepError) {
          cancelled(signal, sleepError);
        }
      }
    }
  }

  async function models(signal?: AbortSignal): Promise<string[]> {
    let renewed = false;
    for (;;) {
      try {
        const { response, what, endpoint } = await open("/models", { method: "GET", accept: "application/json" }, signal);
        const status = response.statusCode ?? 0;
        if (status === 401 && options.renewCredentials && !renewed) {
          discard(response);
          renewed = true;
          options.renewCredentials(endpoint);
          continue;
        }
        if (status < 200 || status >= 300) {
          discard(response);
          const reason = status >= 500 ? "server_error" : status === 401 || status === 403 ? "unauthorized" : "refused";
          throw new ProviderError(name, reason, `provider ${name}: ${what} answered ${status}`, status);
        }
        let list: unknown;
        try {
          list = JSON.parse(await readBody(response));
        } catch (error) {
          if (signal?.aborted) throw error;
          throw new ProviderError(name, "bad_reply", `provider ${name}: ${what} answered no model list`, status);
        }
        const data = isObject(list) && Array.isArray(list.data) ? list.data : undefined;
        if (!data) throw new ProviderError(name, "bad_reply", `provider ${name}: ${what} answered no model list`, status);
        return data.flatMap((m) => (isObject(m) && typeof m.id === "string" ? [m.id] : []));
      } catch (error) {
        if (error instanceof Transient) throw new ProviderError(name, error.reason, `provider ${name}: ${error.detail}`, error.status);
        cancelled(signal, error);
      }
    }
  }

  return { name, kind, chat, models, close: () => agents.destroy() };
}
