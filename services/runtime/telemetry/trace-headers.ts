// Trace context across the hops that are not RPCs: HTTP into the gateway, NATS messages between
// services. Uses the globally registered propagator (W3C trace-context once telemetry started).
import { context, propagation } from "@opentelemetry/api";
import { headerGetter, headerSetter, type HeaderSink, type HeaderSource } from "./header-carriers.js";

/** Writes the active trace context (traceparent, tracestate) into outgoing headers. */
export function injectTraceHeaders<C extends HeaderSink>(carrier: C): C {
  propagation.inject(context.active(), carrier, headerSetter);
  return carrier;
}

/** Runs fn with the trace context the incoming headers carry as the active one. */
export function withExtractedContext<T>(headers: HeaderSource, fn: () => T): T {
  return context.with(propagation.extract(context.active(), headers, headerGetter), fn);
}
