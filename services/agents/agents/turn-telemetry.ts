// The agent gateway's own instruments around a turn (documented names): span `app.agent.turn`
// (scope App.Agent), `app.provider.chat_completion` per provider call (App.Providers, a `retry`
// event per retry), `app.tool.invoke` per tool call (App.Tools), and the meter App.Agent's six
// instruments. Providers come from the module's wiring (the gateway's own tracer and meter
// providers, Gateway:Telemetry:*); unset, the process's global ones.
import {
  type Counter,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";

export interface TelemetryProviders {
  tracerProvider?: TracerProvider;
  meterProvider?: MeterProvider;
}

export interface TurnInstruments {
  agent: Tracer;
  providers: Tracer;
  tools: Tracer;
  turns: Counter;
  turnDuration: Histogram;
  tokens: Counter;
  toolInvocations: Counter;
  providerErrors: Counter;
  providerLatency: Histogram;
}

export function turnInstruments(providers: TelemetryProviders = {}): TurnInstruments {
  const tracerProvider = providers.tracerProvider ?? trace.getTracerProvider();
  const meter = (providers.meterProvider ?? metrics.getMeterProvider()).getMeter("App.Agent");
  return {
    agent: tracerProvider.getTracer("App.Agent"),
    providers: tracerProvider.getTracer("App.Providers"),
    tools: tracerProvider.getTracer("App.Tools"),
    turns: meter.createCounter("app.agent.turns", { unit: "turns", description: "completed turns" }),
    turnDuration: meter.createHistogram("app.agent.turn_duration", { unit: "ms", description: "wall-clock time per turn" }),
    tokens: meter.createCounter("app.tokens.total", { unit: "tokens", description: "prompt plus completion tokens" }),
    toolInvocations: meter.createCounter("app.tools.invocations", { unit: "calls", description: "tool invocations, tagged by tool name" }),
    providerErrors: meter.createCounter("app.providers.errors", {
      unit: "errors",
      description: "errors after retries are exhausted; cancellations excluded",
    }),
    providerLatency: meter.createHistogram("app.providers.latency", { unit: "ms", description: "per-provider call latency" }),
  };
}

/** Ends a span: Ok on success, Unset when cancelled or timed out, Error otherwise. */
export function endSpan(span: Span, outcome: "ok" | "cancelled" | { error: string }): void {
  if (outcome === "ok") span.setStatus({ code: SpanStatusCode.OK });
  else if (outcome !== "cancelled") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
  span.end();
}
