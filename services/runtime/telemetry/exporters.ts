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
import type { MetricExporterPlan, TraceExporterPlan } from "./telemetry-config.js";

// The SDK's own default; a shorter metric interval caps it, since the SDK refuses a timeout
// longer than the interval.
const EXPORT_TIMEOUT_MS = 30_000;

export function createSpanProcessor(plan: TraceExporterPlan, serviceName: string): SpanProcessor {
  switch (plan.kind) {
    case "console":
      // Printed as each span ends, so the output follows the work rather than a batch timer.
      return new SimpleSpanProcessor(new ConsoleSpanExporter());
    case "zipkin":
      return new BatchSpanProcessor(new ZipkinExporter({ serviceName, ...(plan.url ? { url: plan.url } : {}) }));
    case "otlp": {
      const config = plan.url ? { url: plan.url } : {};
      return new BatchSpanProcessor(plan.protocol === "grpc" ? new OtlpGrpcTraceExporter(config) : new OtlpHttpTraceExporter(config));
    }
  }
}

export function createMetricReader(plan: MetricExporterPlan, intervalMs: number): IMetricReader {
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
