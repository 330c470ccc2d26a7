// Turns a telemetry plan into SDK span processors and metric readers.
import { OTLPMetricExporter as OtlpGrpcMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPMetricExporter as OtlpHttpMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter as OtlpGrpcTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPTraceExporter as OtlpHttpTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { ZipkinExporter } from "@opentelemetry/exporter-zipkin";
import {
  ConsoleMetricExporter,
  type IMetricReader,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ScopeFilterSpanProcessor } from "./scope-filter.js";
import type { MetricExporterPlan, TraceExporterPlan } from "./telemetry-config.js";

// The SDK's own default; a shorter metric interval caps it, since the SDK refuses a timeout
// longer than the interval.
const EXPORT_TIMEOUT_MS = 30_000;

/** undefined when the plan lets no span through (console with no scope to print). */
export function createSpanProcessor(plan: TraceExporterPlan, serviceName: string): SpanProcessor | undefined {
  switch (plan.kind) {
    case "console": {
      if (plan.scopes !== "all" && plan.scopes.length === 0) {
        // Nothing would be printed: no processor, so (with no other exporter) spans are not even
        // recorded, while trace context still flows.
        return undefined;
      }
      // Printed as each span ends, so the output follows the work rather than a batch timer.
      const printer = new SimpleSpanProcessor(new ConsoleSpanExporter());
      return plan.scopes === "all" ? printer : new ScopeFilterSpanProcessor(printer, plan.scopes);
    }
    case "zipkin":
      return new BatchSpanProcessor(new ZipkinExporter({ serviceName, ...(plan.url ? { url: plan.url } : {}) }));
    case "otlp": {
      const config = plan.url ? { url: plan.url } : {};
      return new BatchSpanProcessor(plan.protocol === "grpc" ? new OtlpGrpcTraceExporter(config) : new OtlpHttpTraceExporter(config));
    }
  }
}

export function createMetricReader(plan: MetricExporterPlan): IMetricReader {
  const { intervalMs } = plan;
  let exporter: PushMetricExporter;
  if (plan.kind === "console") {
    exporter = new ConsoleMetricExporter();
  } else {
    const config = plan.url ? { url: plan.url } : {};
    exporter = plan.protocol === "grpc" ? new OtlpGrpcMetricExporter(config) : new OtlpHttpMetricExporter(config);
  }
  return new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: intervalMs,
    exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MS, intervalMs),
  });
}
