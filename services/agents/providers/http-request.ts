// One HTTP request of a provider on node:http/https: its own agent (so a provider's TLS choice,
// DangerouslyDisableSslValidation, touches no other request), and the caller's signal wired to the
// socket, so an abort really closes the upstream connection.
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

export interface ProviderAgents {
  http: HttpAgent;
  https: HttpsAgent;
  destroy(): void;
}

export function createProviderAgents(options: { rejectUnauthorized: boolean }): ProviderAgents {
  const http = new HttpAgent({ keepAlive: true });
  const https = new HttpsAgent({ keepAlive: true, rejectUnauthorized: options.rejectUnauthorized });
  return {
    http,
    https,
    destroy() {
      http.destroy();
      https.destroy();
    },
  };
}

export interface SendOptions {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  agents: ProviderAgents;
}

/** Answers the response once its head has arrived; the body is read by the caller (as a stream). */
export function send(url: URL, options: SendOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === "https:";
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined) headers["content-length"] = String(Buffer.byteLength(options.body));
    const req = (secure ? httpsRequest : httpRequest)(url, {
      method: options.method,
      headers,
      agent: secure ? options.agents.https : options.agents.http,
      signal: options.signal,
    });
    req.once("response", resolve);
    req.once("error", reject);
    req.end(options.body);
  });
}

/** Reads a whole (small) body: JSON answers and error bodies. */
export async function readBody(response: IncomingMessage, limit = 1 << 20): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      response.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Throws away a body we do not read, keeping the connection reusable. */
export function discard(response: IncomingMessage): void {
  response.resume();
}

/** A socket-level failure's code (ECONNREFUSED, ECONNRESET…): safe to put in a message, unlike a URL with credentials. */
export function socketCode(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string") return code;
  return error instanceof Error && error.message === "aborted" ? "ECONNRESET" : "socket error";
}
