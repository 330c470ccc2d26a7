// One POST to a webhook endpoint over keep-alive connections, to the addresses the SSRF guard
// checked, bounded by the attempt's signal (timeout or shutdown). The answer's body is read and
// dropped: only its status and Retry-After matter, and a receiver's text is not ours to store.
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { checkDestination, pinnedLookup, type DestinationPolicy, type Resolver } from "./ssrf-guard.js";

export interface HttpAnswer {
  status: number;
  retryAfter: string | undefined;
}

export interface HttpSender {
  post(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<HttpAnswer>;
  close(): void;
}

export interface HttpSenderOptions {
  policy: DestinationPolicy;
  /** Sockets kept per destination: the dispatcher's concurrency. */
  maxSockets: number;
  /** Tests swap the system resolver for a table. */
  resolve?: Resolver;
}

export function createHttpSender(options: HttpSenderOptions): HttpSender {
  const poolOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxSockets };
  const pools = { "http:": new http.Agent(poolOptions), "https:": new https.Agent(poolOptions) };

  async function post(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<HttpAnswer> {
    // Resolved before every attempt: what the name pointed to last time proves nothing now.
    const checked = await abortable(checkDestination(url, options.policy, options.resolve), signal);
    const payload = Buffer.from(body, "utf8");
    const client = url.protocol === "https:" ? https : http;
    return new Promise<HttpAnswer>((resolve, reject) => {
      const req = client.request(
        url,
        {
          method: "POST",
          agent: pools[url.protocol as "http:" | "https:"],
          headers: { ...headers, "content-length": String(payload.length) },
          lookup: pinnedLookup(checked) as unknown as LookupFunction,
          signal,
        },
        (res) => {
          const answer = { status: res.statusCode ?? 0, retryAfter: headerValue(res.headers["retry-after"]) };
          res.on("error", reject);
          res.on("end", () => resolve(answer));
          // A connection cut in the middle of the answer: no "end", maybe no "error" either.
          res.on("close", () => {
            if (!res.complete) reject(Object.assign(new Error("answer cut short"), { code: "ECONNRESET" }));
          });
          res.resume();
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  return {
    post,
    close() {
      pools["http:"].destroy();
      pools["https:"].destroy();
    },
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** DNS lookups cannot be cancelled; the attempt stops waiting for one when its signal fires. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
