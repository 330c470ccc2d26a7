// The service host: Connect routes with gRPC health and reflection, an h2c server for them, and
// the server interceptors every service runs behind.
//
// Recommended server interceptor order (outermost first):
//   [requestContextInterceptor, serverTracingInterceptor(), errorInterceptor(logger)]
// so the error log line carries the request id and sits inside the RPC span.
export { buildRoutes, type BuildRoutesOptions, type ServiceRoutes } from "./build-routes.js";
export {
  createDirectTransport,
  type DirectTransportOptions,
  type DirectTransportSource,
} from "./direct-transport.js";
export { createGrpcClientTransport, type GrpcClientTransportOptions, neverSent } from "./grpc-client-transport.js";
export {
  type BalancedTransportOptions,
  createBalancedTransport,
  DEFAULT_SKIP_MS,
  splitAddresses,
} from "./balanced-transport.js";
export {
  createHealthRegistry,
  type HealthRegistry,
  type ServingStatus,
  type WatchedStatus,
} from "./health/health-registry.js";
export {
  DEFAULT_UNAVAILABLE_RETRY_AFTER_SECONDS,
  errorInterceptor,
  type ErrorInterceptorOptions,
} from "./interceptors/error-interceptor.js";
export {
  forwardRequestIdInterceptor,
  requestContextInterceptor,
} from "./interceptors/request-context-interceptor.js";
export type { Logger } from "./logger.js";
export {
  getRequestId,
  REQUEST_ID_HEADER,
  requestContext,
  type RequestContext,
} from "./request-context.js";
export { CLIENT_ADDRESS_HEADER, clientAddressOf, normalizeAddress } from "./client-address.js";
export {
  DEFAULT_SERVICE_PORT,
  startServiceHost,
  type ServiceHost,
  type StartServiceHostOptions,
} from "./service-host.js";
export { defineService, definePartialService, type ServiceRegistration } from "./service-registration.js";
