// The agent gateway's own telemetry against a loopback OTLP/HTTP collector: service.name `app` by
// default, the App.* scopes, the six instruments with their units, the span status rules, the
// OTEL_* overrides, disabling, and reconfiguring (hot reload) flushing the old providers.
import { type Attributes, type Span, SpanStatusCode } from "@opentelemetry/api";
import test from "ava";
import pino from "pino";
import { startFakeOtlp } from "../../../test/support/fake-otlp.js";
import { createLogger } from "../../runtime/logging/index.js";
import { startTelemetry, type Telemetry } from "../../runtime/telemetry/index.js";
import { endSpan } from "../agents/turn-telemetry.js";
import { type AgentScope, type AgentTelemetry, createAgentTelemetry } from "./agent-telemetry.js";
import type { GatewayTelemetrySettings } from "./telemetry-settings.js";

const logger = pino({ level: "silent" });

// The mesh's own SDK, as the meshwork command starts it (exporting nothing): it brings the context
// manager that lets the agent gateway's spans nest.
let mesh: Telemetry | undefined;
test.before(async () => {
  mesh = await startTelemetry({
    serviceName: "agent-telemetry-test",
    exporter: "none",
    env: {},
    logger: createLogger({ level: "silent" }),
  });
});
test.after.always(() => mesh?.shutdown());

const settings = (endpoint: string, extra: Partial<GatewayTelemetrySettings> = {}): GatewayTelemetrySettings => ({
  enabled: true,
  serviceName: "app",
  exporter: "otlp",
  otlpProtocol: "http",
  endpoint,
  ...extra,
});

class Cancelled extends Error {
  override name = "AbortError";
}

/** A span of `scope` around `work`, ended as the turn code ends its spans (turn-telemetry.ts). */
function inSpan(telemetry: AgentTelemetry, scope: AgentScope, name: string, attributes: Attributes, work: (span: Span) => Promise<void>) {
  return telemetry.tracer(scope).startActiveSpan(name, { attributes }, async (span) => {
    try {
      await work(span);
      endSpan(span, "ok");
    } catch (err) {
      endSpan(span, err instanceof Cancelled ? "cancelled" : { error: (err as Error).message });
      throw err;
    }
  });
}

test("spans of the App.* scopes and the six App.Agent instruments reach OTLP/HTTP under service.name app, flushed at shutdown", async (t) => {
  const otlp = await startFakeOtlp();
  t.teardown(() => otlp.close());
  const telemetry = createAgentTelemetry({ settings: settings(otlp.url), otelEnv: {}, logger });
  const { instruments } = telemetry;

  await inSpan(
    telemetry,
    "App.Agent",
    "app.agent.turn",
    { "gen_ai.system": "fake", "gen_ai.request.model": "m1", "app.turn.index": 0, "app.agent.turn_count": 1 },
    async () => {
      await inSpan(telemetry, "App.Providers", "app.provider.chat_completion", { "app.provider.attempt": 2 }, async (span) => {
        span.addEvent("retry");
      });
      await inSpan(telemetry, "App.Tools", "app.tool.invoke", { "gen_ai.tool.name": "think" }, async () => {});
    },
  );
  // Cancelled: Unset, no error count. Failed: Error with one app.providers.errors.
  await t.throwsAsync(
    inSpan(telemetry, "App.Agent", "app.agent.turn", { "gen_ai.system": "fake" }, async () => Promise.reject(new Cancelled("stop"))),
  );
  await t.throwsAsync(
    inSpan(telemetry, "App.Providers", "app.provider.chat_completion", { "gen_ai.system": "down" }, async (span) => {
      telemetry.instruments.providerErrors.add(1, { "gen_ai.system": "down" });
      throw new Error(`all retries failed (${span.isRecording() ? "recorded" : "not recorded"})`);
    }),
  );
  instruments.turns.add(1, { "gen_ai.system": "fake" });
  instruments.turnDuration.record(120, { "gen_ai.system": "fake" });
  instruments.tokens.add(42, { "gen_ai.system": "fake" });
  instruments.toolInvocations.add(1, { "gen_ai.system": "fake", "gen_ai.tool.name": "think" });
  instruments.providerLatency.record(80, { "gen_ai.system": "fake" });
  await telemetry.shutdown();

  const spans = otlp.spans();
  t.deepEqual(spans.map((s) => [s.scope, s.name]).sort(), [
    ["App.Agent", "app.agent.turn"],
    ["App.Agent", "app.agent.turn"],
    ["App.Providers", "app.provider.chat_completion"],
    ["App.Providers", "app.provider.chat_completion"],
    ["App.Tools", "app.tool.invoke"],
  ]);
  t.true(spans.every((s) => s.resource["service.name"] === "app"));
  const [turn, cancelled] = spans.filter((s) => s.name === "app.agent.turn");
  t.is(turn!.status, SpanStatusCode.OK);
  t.like(turn!.attributes, { "gen_ai.system": "fake", "gen_ai.request.model": "m1", "app.turn.index": 0, "app.agent.turn_count": 1 });
  t.is(cancelled!.status, SpanStatusCode.UNSET);
  const [call, failed] = spans.filter((s) => s.name === "app.provider.chat_completion");
  t.deepEqual(call!.events, ["retry"]);
  t.is(call!.traceId, turn!.traceId, "the provider call is inside the turn's trace");
  t.is(failed!.status, SpanStatusCode.ERROR);

  const metrics = new Map(otlp.metrics().map((m) => [m.name, m]));
  t.deepEqual([...metrics.values()].map((m) => [m.name, m.kind, m.unit, m.scope]).sort(), [
    ["app.agent.turn_duration", "histogram", "ms", "App.Agent"],
    ["app.agent.turns", "sum", "turns", "App.Agent"],
    ["app.providers.errors", "sum", "errors", "App.Agent"],
    ["app.providers.latency", "histogram", "ms", "App.Agent"],
    ["app.tokens.total", "sum", "tokens", "App.Agent"],
    ["app.tools.invocations", "sum", "calls", "App.Agent"],
  ]);
  t.deepEqual(metrics.get("app.providers.errors")!.points, [{ attributes: { "gen_ai.system": "down" }, value: 1 }]);
  t.deepEqual(metrics.get("app.tools.invocations")!.points, [
    { attributes: { "gen_ai.system": "fake", "gen_ai.tool.name": "think" }, value: 1 },
  ]);
  t.deepEqual(metrics.get("app.tokens.total")!.points, [{ attributes: { "gen_ai.system": "fake" }, value: 42 }]);
});

test("OTEL_SERVICE_NAME and OTEL_EXPORTER_OTLP_ENDPOINT win over the settings; the endpoint switches to OTLP", async (t) => {
  const otlp = await startFakeOtlp();
  t.teardown(() => otlp.close());
  const telemetry = createAgentTelemetry({
    settings: { enabled: true, serviceName: "app", exporter: "console", otlpProtocol: "grpc" },
    otelEnv: { OTEL_SERVICE_NAME: "gateway-7", OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
    logger,
  });
  await inSpan(telemetry, "App.Sessions", "app.session.save", {}, async () => {});
  await telemetry.shutdown();
  t.deepEqual(
    otlp.spans().map((s) => [s.resource["service.name"], s.scope, s.name]),
    [["gateway-7", "App.Sessions", "app.session.save"]],
  );
});

test("Enabled=false: nothing is exported; reconfigure flushes the old providers and the new settings take over", async (t) => {
  const first = await startFakeOtlp();
  const second = await startFakeOtlp();
  t.teardown(() => Promise.all([first.close(), second.close()]).then(() => undefined));
  const telemetry = createAgentTelemetry({ settings: settings(first.url, { enabled: false }), otelEnv: {}, logger });
  await inSpan(telemetry, "App.Agent", "app.agent.turn", {}, async () => {});
  telemetry.instruments.turns.add(1);

  await telemetry.reconfigure(settings(first.url));
  await inSpan(telemetry, "App.Agent", "app.agent.turn", { "app.turn.index": 1 }, async () => {});
  await telemetry.reconfigure(settings(second.url, { serviceName: "renamed" }));
  t.deepEqual(
    first.spans().map((s) => s.attributes["app.turn.index"]),
    [1],
    "the disabled span went nowhere; the first endpoint's span was flushed by the swap",
  );
  await inSpan(telemetry, "App.Agent", "app.agent.turn", { "app.turn.index": 2 }, async () => {});
  await telemetry.shutdown();
  t.deepEqual(
    second.spans().map((s) => [s.resource["service.name"], s.attributes["app.turn.index"]]),
    [["renamed", 2]],
  );
});
