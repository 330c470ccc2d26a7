// The assistant's short-lived API token: `GET TokenExchangeUrl` with `Authorization: token <oauth>`
// answers `{ token, expires_at, refresh_in, endpoints: { api } }`. Cached until 60 s before
// expires_at; one exchange at a time (callers arriving meanwhile share it, and one caller giving up
// does not abort it for the others); a token refused upstream is dropped so the next call exchanges.
import { once } from "node:events";
import { ProviderError, TransientProviderError } from "./errors.js";
import { discard, type ProviderAgents, readBody, send, socketCode } from "./http-request.js";
import { isObject } from "./reply-assembler.js";

export interface ExchangedToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** `endpoints.api`: the base of chat/completions and models. */
  api: string;
}

export interface TokenExchangeOptions {
  provider: string;
  url: string;
  /** The OAuth token, looked up at each exchange (a file may appear later); undefined: none found. */
  oauthToken(): Promise<string | undefined>;
  /** Editor-Version and User-Agent, sent to the exchange as to the API. */
  headers: Record<string, string>;
  agents: ProviderAgents;
  /** Per exchange (default 30 s). */
  timeoutMs?: number;
  now?: () => number;
}

/** Refreshed this long before expires_at. */
export const REFRESH_MARGIN_MS = 60_000;

export class TokenExchange {
  #cached: ExchangedToken | undefined;
  #inflight: Promise<ExchangedToken> | undefined;
  readonly #now: () => number;

  constructor(readonly options: TokenExchangeOptions) {
    this.#now = options.now ?? Date.now;
  }

  /** A token valid for at least 60 s more, exchanged when needed. */
  async get(signal?: AbortSignal): Promise<ExchangedToken> {
    signal?.throwIfAborted();
    const cached = this.#cached;
    if (cached && cached.expiresAt - REFRESH_MARGIN_MS > this.#now()) return cached;
    if (!this.#inflight) {
      this.#inflight = this.#exchange().finally(() => {
        this.#inflight = undefined;
      });
    }
    return signal ? abortable(this.#inflight, signal) : this.#inflight;
  }

  /** Drops the cached token if it is still `token` (a token exchanged since by another caller stays). */
  drop(token?: string): void {
    if (token === undefined || this.#cached?.token === token) this.#cached = undefined;
  }

  async #exchange(): Promise<ExchangedToken> {
    const { provider } = this.options;
    const oauth = await this.options.oauthToken();
    if (!oauth) {
      throw new ProviderError(
        provider,
        "no_credentials",
        `provider ${provider}: no OAuth token (OAuthToken, ASSISTANT_TOKEN, TokenFilePath, apps.json or hosts.json)`,
      );
    }
    const url = new URL(this.options.url);
    const what = `token exchange GET ${url.pathname}`;
    let text: string;
    let status: number;
    try {
      const response = await send(url, {
        method: "GET",
        headers: { ...this.options.headers, authorization: `token ${oauth}`, accept: "application/json" },
        agents: this.options.agents,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
      status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        discard(response);
        if (status >= 500) throw new TransientProviderError("server_error", `${what} answered ${status}`, status);
        throw new ProviderError(provider, "unauthorized", `provider ${provider}: ${what} answered ${status}`, status);
      }
      text = await readBody(response);
    } catch (error) {
      if (error instanceof ProviderError || error instanceof TransientProviderError) throw error;
      throw new TransientProviderError("unreachable", `${what} unreachable (${socketCode(error)})`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const api = isObject(body) && isObject(body.endpoints) ? body.endpoints.api : undefined;
    if (!isObject(body) || typeof body.token !== "string" || typeof body.expires_at !== "number" || typeof api !== "string") {
      throw new ProviderError(
        provider,
        "bad_reply",
        `provider ${provider}: ${what} answered no token, expires_at or endpoints.api`,
        status,
      );
    }
    const exchanged = { token: body.token, expiresAt: body.expires_at * 1000, api };
    this.#cached = exchanged;
    return exchanged;
  }
}

/** Waits for the shared exchange, or stops waiting (without aborting it) when this caller's signal fires. */
async function abortable<T>(shared: Promise<T>, signal: AbortSignal): Promise<T> {
  const done = new AbortController();
  try {
    const aborted = once(signal, "abort", { signal: done.signal }).then(() => Promise.reject(signal.reason));
    return await Promise.race([shared, aborted]);
  } finally {
    done.abort();
  }
}
