// Answers the errors Node's HTTP parser raises before there is a request to hand to the gateway
// (headers too large, too slow, malformed), in the front's error style, then closes the socket:
// after such an error the connection's framing cannot be trusted.
import type { Duplex } from "node:stream";
import { HttpError } from "../errors/http-error.js";
import { renderError } from "../errors/render-error.js";
import { type AccessLogLevel, accessLogWriter, type GatewayLogger } from "../logger.js";
import type { ErrorStyleName } from "../style.js";
import { reasonPhrase } from "../transcoder/status-codes.js";

function errorFor(code: string | undefined): HttpError {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new HttpError(431, "request_header_fields_too_large", "The request line and headers are larger than this server accepts.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new HttpError(408, "request_timeout", "The request was not received in time.");
    default:
      return new HttpError(400, "bad_request", "The request is not valid HTTP.");
  }
}

/** `accessLogLevel`: the refusal is an access line (a 4xx the client caused), logged at that level. */
export function answerClientError(
  err: Error & { code?: string },
  socket: Duplex,
  style: ErrorStyleName,
  logger: GatewayLogger,
  accessLogLevel?: AccessLogLevel,
): void {
  // A response already under way (or a peer that is gone) cannot take another status line.
  const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || pending?.headersSent) {
    socket.destroy();
    return;
  }
  const error = errorFor(err.code);
  const rendered = renderError(error, style);
  const body = JSON.stringify(rendered.document);
  accessLogWriter(logger, accessLogLevel)?.({ status: error.status, code: err.code }, "request refused before routing");
  socket.end(
    `HTTP/1.1 ${error.status} ${reasonPhrase(error.status)}\r\n` +
      `content-type: ${rendered.contentType}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      "connection: close\r\n\r\n" +
      body,
  );
  // Whatever the client still sends is not read; without this the socket would wait for it.
  socket.once("finish", () => socket.destroy());
}
