// The agent gateway's own tracer and meter providers, driven by Gateway:Telemetry:* (and the
// OTEL_* variables over them), apart from the mesh's global SDK: its spans (App.Agent, App.Providers,
// App.Tools, App.Sessions) and the six App.Agent instruments go where these settings say, under
// service.name `app` by default. Not registered globally; the active context still parents its
// spans, so a turn's span sits under the RPC that ran it when both export to one place.
// The turn code (agents/turns.ts, turn-telemetry.ts) makes the spans and keeps the status rules.
//
// reconfigure() swaps the providers for hot reload: the old ones flush and shut down, and callers,
// which ask for a tracer or the instruments each time, use the new ones from then on.
import { type Counter, createNoopMeter, type Histogram, type Meter, ProxyTracerProvider, type Tracer } from "@opentelemetry/api";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import type { Logger } from "pino";
import { createMetricReader, createSpanProcessor } from "../../runtime/telemetry/exporters.js";
import { CONSOLE_METRICS_MIN_INTERVAL_MS, planTelemetry } from "../../runtime/telemetry/index.js";
import type { GatewayTelemetrySettings } from "./telemetry-settings.js";

export const agentScopes = ["App.Agent", "App.Providers", "App.Tools", "App.Sessions"] as const;
export type AgentScope = (typeof agentScopes)[number];

export interface AgentInstruments {
  /** app.agent.turns: completed turns. */
  turns: Counter;
  /** app.agent.turn_duration: wall-clock time per turn, ms. */
  turnDuration: Histogram;
  /** app.tokens.total: prompt plus completion tokens. */
  tokens: Counter;
  /** app.tools.invocations: tool invocations, tagged gen_ai.tool.name. */
  toolInvocations: Counter;
  /** app.providers.errors: errors after retries are exhausted; cancellations excluded. */
  providerErrors: Counter;
  /** app.providers.latency: per-provider call latency, ms. */
  providerLatency: Histogram;
}

export interface AgentTelemetry {
  tracer(scope: AgentScope): Tracer;
  readonly instruments: AgentInstruments;
  /** New settings (hot reload): the old providers flush and stop. */
  reconfigure(settings: GatewayTelemetrySettings): Promise<void>;
  /** Flushes and stops (at shutdown). */
  shutdown(): Promise<void>;
}

export interface AgentTelemetryOptions {
  settings: GatewayTelemetrySettings;
  /** OTEL_* variables as the config loader found them. */
  otelEnv: Readonly<Record<string, string | undefined>>;
  serviceVersion?: string;
  logger: Logger;
}

interface Providers {
  tracers: (scope: AgentScope) => Tracer;
  instruments: AgentInstruments;
  shutdown(): Promise<void>;
}

export function createAgentTelemetry(options: AgentTelemetryOptions): AgentTelemetry {
  const log = options.logger.child({ component: "agent-telemetry" });
  let current = buildProviders(options.settings, options, log);

  return {
    tracer: (scope) => current.tracers(scope),
    get instruments() {
      return current.instruments;
    },
    async reconfigure(settings) {
      const previous = current;
      current = buildProviders(settings, options, log);
      await previous.shutdown();
    },
    shutdown: () => current.shutdown(),
  };
}

function buildProviders(settings: GatewayTelemetrySettings, options: AgentTelemetryOptions, log: Logger): Providers {
  if (!settings.enabled) {
    const tracer = new ProxyTracerProvider().getTracer("App.Agent"); // no delegate: a no-op tracer
    log.info({}, "agent gateway telemetry disabled (Gateway:Telemetry:Enabled=false)");
    return { tracers: () => tracer, instruments: instrumentsOf(createNoopMeter()), shutdown: async () => {} };
  }
  const env = options.otelEnv;
  // OTEL_EXPORTER_OTLP_ENDPOINT switches to OTLP, as the interface has it.
  const exporter = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() ? "otlp" : settings.exporter;
  const plan = planTelemetry({
    serviceName: settings.serviceName,
    ...(options.serviceVersion ? { serviceVersion: options.serviceVersion } : {}),
    exporter,
    otlpProtocol: settings.otlpProtocol,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    // Few spans (a turn, a provider call, a tool call): the console prints every one of them.
    consoleSpans: "all",
    // Only the variables the interface names; OTEL_TRACES_EXPORTER and the like drive the mesh's SDK.
    env: pick(env, [
      "OTEL_SERVICE_NAME",
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
      "OTEL_METRIC_EXPORT_INTERVAL",
    ]),
  });
  for (const problem of plan.problems) log.warn({ problem }, "agent gateway telemetry setting ignored");
  const serviceName = plan.resourceAttributes["service.name"] ?? settings.serviceName;
  const resource = defaultResource().merge(resourceFromAttributes(plan.resourceAttributes));
  // Zipkin has no metrics: they go to the console.
  const metricPlans =
    exporter === "zipkin"
      ? [{ kind: "console" as const, intervalMs: Math.max(plan.metricsIntervalMs, CONSOLE_METRICS_MIN_INTERVAL_MS) }]
      : plan.metrics;
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: plan.traces.flatMap((t) => createSpanProcessor(t, serviceName) ?? []),
  });
  const meterProvider = new MeterProvider({ resource, readers: metricPlans.map(createMetricReader) });
  log.info(
    { serviceName, exporter, protocol: exporter === "otlp" ? plan.traces[0]?.kind === "otlp" && plan.traces[0].protocol : undefined },
    "agent gateway telemetry started",
  );
  const tracers = new Map<AgentScope, Tracer>(agentScopes.map((scope) => [scope, tracerProvider.getTracer(scope)]));
  let stopping: Promise<void> | undefined;
  return {
    tracers: (scope) => tracers.get(scope)!,
    instruments: instrumentsOf(meterProvider.getMeter("App.Agent")),
    shutdown() {
      stopping ??= Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]).then((results) => {
        for (const r of results) if (r.status === "rejected") log.warn({ err: r.reason }, "agent gateway telemetry did not flush cleanly");
      });
      return stopping;
    },
  };
}

function instrumentsOf(meter: Meter): AgentInstruments {
  return {
    turns: meter.createCounter("app.agent.turns", { unit: "turns", description: "Completed turns." }),
    turnDuration: meter.createHistogram("app.agent.turn_duration", { unit: "ms", description: "Wall-clock time per turn." }),
    tokens: meter.createCounter("app.tokens.total", { unit: "tokens", description: "Prompt plus completion tokens." }),
    toolInvocations: meter.createCounter("app.tools.invocations", { unit: "calls", description: "Tool invocations, by tool name." }),
    providerErrors: meter.createCounter("app.providers.errors", {
      unit: "errors",
      description: "Errors after retries are exhausted; cancellations excluded.",
    }),
    providerLatency: meter.createHistogram("app.providers.latency", { unit: "ms", description: "Per-provider call latency." }),
  };
}

function pick(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): Record<string, string | undefined> {
  return Object.fromEntries(names.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]));
}
