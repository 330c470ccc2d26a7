// HTTP calls to a chat platform's API, shared by the adapters (Telegram, Signal; Slack and Discord
// later): JSON in and out, a 429 waited out and retried (Telegram's body `parameters.retry_after`,
// Discord's body `retry_after`, else the Retry-After header, in seconds), and errors that never
// carry a token. Errors name the call by a label the adapter gives ("telegram getMe"), never by its
// URL (Telegram's URLs hold the bot token); the adapter's secrets are also cut out of any message
// that comes from below (a socket error) before it leaves here.
import { setTimeout as sleep } from "node:timers/promises";
import { ChannelPlatformError } from "./channel-adapter.js";

export interface PlatformCall {
  /** Names the call in errors and logs: "telegram sendMessage". */
  label: string;
  url: string;
  method?: "GET" | "POST";
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Aborts the call (and a 429 wait); a long poll passes its own. */
  signal?: AbortSignal;
  /** Per attempt; default 30 s. A long poll sets its timeout plus a margin. */
  timeoutMs?: number;
}

export interface PlatformHttpOptions {
  /** Values cut out of any error message (tokens). */
  secrets: () => readonly string[];
  /** How many 429s are waited out before giving up; default 5. */
  maxRetries?: number;
  /** A 429 asking for a longer wait than this is not waited out; default 300 s. */
  maxWaitSeconds?: number;
  /** Told of each 429 wait (for the log). */
  onRateLimited?: (label: string, seconds: number) => void;
}

export interface PlatformAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body; undefined when empty or not JSON. */
  body: unknown;
}

export type PlatformHttp = (call: PlatformCall) => Promise<PlatformAnswer>;

/** Builds the caller: any status but 429 is answered for the adapter to judge; a socket failure throws ChannelPlatformError("unreachable"). */
export function platformHttp(options: PlatformHttpOptions): PlatformHttp {
  const maxRetries = options.maxRetries ?? 5;
  const maxWait = options.maxWaitSeconds ?? 300;
  const clean = (text: string) => redact(text, options.secrets());

  return async (call) => {
    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(call.timeoutMs ?? 30_000);
      const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
      let res: Response;
      try {
        res = await fetch(call.url, {
          method: call.method ?? (call.body === undefined ? "GET" : "POST"),
          headers: { ...(call.body === undefined ? {} : { "content-type": "application/json" }), ...call.headers },
          body: call.body === undefined ? undefined : JSON.stringify(call.body),
          signal,
        });
      } catch (error) {
        if (call.signal?.aborted) throw call.signal.reason ?? error;
        throw new ChannelPlatformError(`${call.label}: ${clean(describeFetchError(error))}`, "unreachable");
      }
      const text = await res.text().catch(() => "");
      const body = parseJson(text);
      if (res.status !== 429) return { status: res.status, headers: res.headers, body };
      const seconds = retryAfterOf(body, res.headers);
      if (attempt >= maxRetries || seconds > maxWait) {
        throw new ChannelPlatformError(`${call.label}: rate limited (429, retry after ${seconds} s); gave up`, "refused");
      }
      options.onRateLimited?.(call.label, seconds);
      await sleep(seconds * 1000, undefined, call.signal ? { signal: call.signal } : undefined);
    }
  };
}

/** The wait a 429 asks for, in seconds (at least 0, default 1). */
export function retryAfterOf(body: unknown, headers: Headers): number {
  const fromBody = (body as { parameters?: { retry_after?: unknown }; retry_after?: unknown } | undefined) ?? {};
  const candidates = [fromBody.parameters?.retry_after, fromBody.retry_after, headers.get("retry-after")];
  for (const value of candidates) {
    const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
    if (Number.isFinite(n) && n >= 0) return n;
  }
  return 1;
}

/** `text` with every non-empty secret replaced by `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join("***");
  return out;
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** undici says "fetch failed" and puts the reason (ECONNREFUSED, a timeout) in `cause`. */
function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === "TimeoutError") return "timed out";
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: string } | undefined)?.code;
  return code ? `${error.message} (${code})` : cause ? `${error.message} (${cause.message})` : error.message;
}
