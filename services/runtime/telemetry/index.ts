// Telemetry: the OpenTelemetry SDK (traces and metrics), RPC tracing interceptors, and the
// trace-header helpers for HTTP and NATS hops.
export { startTelemetry, type StartTelemetryOptions, type Telemetry } from "./start-telemetry.js";
export {
  CONSOLE_METRICS_MIN_INTERVAL_MS,
  type ConsoleSpans,
  planTelemetry,
  type MetricExporterPlan,
  type OtlpProtocol,
  type TelemetryExporter,
  type TelemetryPlan,
  type TelemetrySettings,
  type TraceExporterPlan,
} from "./telemetry-config.js";
export {
  clientTracingInterceptor,
  serverTracingInterceptor,
  tracingInterceptor,
  type RpcTracingOptions,
  type TracingInterceptorOptions,
} from "./rpc-tracing-interceptor.js";
export { injectTraceHeaders, withExtractedContext } from "./trace-headers.js";
export type { HeaderSink, HeaderSource } from "./header-carriers.js";
export type { Logger } from "./logger.js";
