// Reads a request body up to a limit. Past the limit nothing more is kept: the 413 goes out at
// once and the rest of the body is drained for a short while, then the connection is cut.
import type { IncomingMessage } from "node:http";
import { HttpError } from "../errors/http-error.js";

// Closing a socket with unread input makes the kernel send a reset, which can destroy the 413
// before the client reads it. Draining for a moment lets well-behaved clients see the answer.
const LINGER_MS = 2000;

function tooLarge(limit: number): HttpError {
  return new HttpError(413, "payload_too_large", `The request body exceeds ${limit} bytes.`);
}

/** Whether the request announces a body at all (HTTP/1.1: a length or a transfer coding). */
export function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return length !== "0";
  return req.headers["transfer-encoding"] !== undefined;
}

/** Throws away what is left of a body we will not use, for at most LINGER_MS. */
export function discardRest(req: IncomingMessage): void {
  if (req.complete) return;
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  timer.unref();
  req.once("end", () => clearTimeout(timer));
  req.once("close", () => clearTimeout(timer));
  req.resume();
}

// The client is most likely gone; if not, a broken upload is still its mistake, never a 5xx.
function cutShort(): HttpError {
  return new HttpError(400, "invalid_argument", "The request body was cut short.");
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) {
    discardRest(req);
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        discardRest(req);
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err instanceof HttpError ? err : cutShort());
    };
    const onAborted = () => onError(cutShort());
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}
