// Starts the OpenTelemetry SDK for this process: traces and metrics to the planned exporters,
// W3C trace-context propagation, an async context manager. No auto-instrumentation: RPC spans
// come from the tracing interceptors, other hops from the trace-header helpers.
import { context, diag, DiagLogLevel, metrics, propagation, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, hostDetector, processDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { createMetricReader, createSpanProcessor } from "./exporters.js";
import type { Logger } from "./logger.js";
import { type MetricExporterPlan, planTelemetry, type TelemetrySettings, type TraceExporterPlan } from "./telemetry-config.js";

export interface StartTelemetryOptions extends TelemetrySettings {
  readonly logger: Logger;
}

export interface Telemetry {
  /** Flushes what is buffered, then unregisters everything, so telemetry can start again. */
  shutdown(): Promise<void>;
}

// The OpenTelemetry API keeps one global of each kind per process; a second SDK would be ignored.
let running = false;

export async function startTelemetry(options: StartTelemetryOptions): Promise<Telemetry> {
  const { logger } = options;
  const plan = planTelemetry(options);
  for (const problem of plan.problems) {
    logger.warn({ problem }, "telemetry setting ignored");
  }
  if (plan.disabled) {
    logger.info({}, "telemetry disabled by OTEL_SDK_DISABLED");
    return { shutdown: async () => {} };
  }
  if (running) {
    throw new Error("telemetry is already running in this process; shut it down first");
  }

  const serviceName = plan.resourceAttributes["service.name"] ?? options.serviceName;
  const spanProcessors = plan.traces.flatMap((exporter) => createSpanProcessor(exporter, serviceName) ?? []);
  const exporting = spanProcessors.length > 0 || plan.metrics.length > 0;
  const sdk = new NodeSDK({
    resource: defaultResource().merge(resourceFromAttributes(plan.resourceAttributes)),
    // Host and process details are worth their cost only when something leaves the process.
    // No env detector: OTEL_RESOURCE_ATTRIBUTES arrives through the plan, not process.env.
    autoDetectResources: exporting,
    resourceDetectors: [hostDetector, processDetector],
    textMapPropagator: new W3CTraceContextPropagator(),
    // Empty lists (not undefined) keep the SDK from falling back to its own OTLP defaults.
    // With no span processor the SDK registers no tracer provider: spans are no-ops, while
    // context and traceparent still flow, so `none` stays cheap without breaking the chain. The
    // default (console, printing only declared scopes, none declared) is that cheap too.
    spanProcessors,
    metricReaders: plan.metrics.map(createMetricReader),
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  running = true;
  diag.setLogger(diagToLogger(logger.child({ component: "opentelemetry" })), {
    logLevel: DiagLogLevel.WARN,
    suppressOverrideMessage: true,
  });
  logger.info(
    {
      serviceName,
      traces: plan.traces.map(describe),
      metrics: plan.metrics.map(describe),
    },
    "telemetry started",
  );

  let stopping: Promise<void> | undefined;
  return {
    shutdown() {
      stopping ??= (async () => {
        try {
          await sdk.shutdown();
        } catch (err) {
          logger.warn({ err }, "telemetry did not flush cleanly");
        } finally {
          trace.disable();
          metrics.disable();
          propagation.disable();
          context.disable();
          diag.disable();
          running = false;
        }
      })();
      return stopping;
    },
  };
}

function describe(plan: TraceExporterPlan | MetricExporterPlan): string {
  const parts: (string | undefined)[] = [plan.kind];
  if (plan.kind !== "console") parts.push("protocol" in plan ? plan.protocol : undefined, plan.url);
  if ("scopes" in plan) {
    parts.push(plan.scopes === "all" ? "(every span)" : plan.scopes.length === 0 ? "(no spans)" : `(spans of ${plan.scopes.join(", ")})`);
  }
  if ("intervalMs" in plan) parts.push(`every ${plan.intervalMs} ms`);
  return parts.filter((part) => part !== undefined).join(" ");
}

function diagToLogger(logger: Logger) {
  const write =
    (level: "error" | "warn" | "info" | "debug") =>
    (message: string, ...args: unknown[]) =>
      logger[level](args.length > 0 ? { args } : {}, message);
  return {
    error: write("error"),
    warn: write("warn"),
    info: write("info"),
    debug: write("debug"),
    verbose: write("debug"),
  };
}
