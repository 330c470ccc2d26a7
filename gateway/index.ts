// Public entry of the REST transcoding gateway: fronts built from google.api.http rules.
export {
  createFront,
  DEFAULT_HEADERS_TIMEOUT_SECONDS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  type Front,
  type FrontOptions,
  type FrontRoute,
} from "./front.js";
export {
  createGatewayHandler,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_SSE_KEEP_ALIVE_SECONDS,
  DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS,
  type GatewayHandler,
  type GatewayHandlerOptions,
  type RouteInfo,
} from "./handler.js";
export { type AccessLogLevel, DEFAULT_ACCESS_LOG_LEVEL, type GatewayLogger } from "./logger.js";
export type { HeaderForwarder } from "./http/forward-headers.js";
export type { FrontStyle } from "./style.js";
export type { StreamFramer } from "./streams/framer.js";
export { ndjsonFramer } from "./streams/ndjson.js";
export { SERVER_SENT_EVENT_BATCH_TYPE, SERVER_SENT_EVENT_TYPE } from "./streams/sse-framer.js";
export { parsePathTemplate, TemplateSyntaxError, type PathTemplate } from "./transcoder/http-rule.js";
export { RouteConflictError } from "./transcoder/route-trie.js";
export { httpStatusOf } from "./transcoder/status-codes.js";
export {
  DEFAULT_HUB_CLIENT_TIMEOUT_SECONDS,
  DEFAULT_HUB_HANDSHAKE_TIMEOUT_SECONDS,
  DEFAULT_HUB_KEEP_ALIVE_SECONDS,
  HUB_CONNECTION_HEADER,
} from "./hubs/index.js";
export { type CorsPolicy, DEFAULT_EXPOSED_HEADERS } from "./http/cors.js";
export type { ForwardedPolicy } from "./http/client-ip.js";
export { CALLER_HEADER } from "./http/response-headers.js";
