// startTelemetry against fake collectors (OTLP/HTTP, Zipkin) listening locally, and the
// trace-header helpers for hops that are not RPCs.
import { metrics, trace } from "@opentelemetry/api";
import test from "ava";
import { startFakeOtlp } from "../../../test/support/fake-otlp.js";
import { startTelemetry } from "./start-telemetry.js";
import { injectTraceHeaders, withExtractedContext } from "./trace-headers.js";

async function fakeCollector(t: { teardown(fn: () => Promise<void>): void }) {
  const collector = await startFakeOtlp();
  t.teardown(() => collector.close());
  return collector;
}

function memoryLogger() {
  const lines: { level: string; obj: object; msg?: string }[] = [];
  const logger = {
    lines,
    debug: (obj: object, msg?: string) => lines.push({ level: "debug", obj, msg }),
    info: (obj: object, msg?: string) => lines.push({ level: "info", obj, msg }),
    warn: (obj: object, msg?: string) => lines.push({ level: "warn", obj, msg }),
    error: (obj: object, msg?: string) => lines.push({ level: "error", obj, msg }),
    child: () => logger,
  };
  return logger;
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

test.serial("OTEL_* variables win over settings: spans and metrics reach an OTLP/HTTP collector", async (t) => {
  const collector = await fakeCollector(t);
  const telemetry = await startTelemetry({
    serviceName: "from-settings",
    serviceVersion: "1.2.3",
    exporter: "console",
    otlpProtocol: "grpc",
    endpoint: "http://127.0.0.1:1",
    env: {
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_METRICS_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: "from-env",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test%20lab",
    },
    logger: memoryLogger(),
  });
  withExtractedContext({ traceparent: PARENT }, () => {
    trace.getTracer("test").startActiveSpan("unit-of-work", (span) => span.end());
  });
  metrics.getMeter("test").createCounter("work.done").add(3);
  await telemetry.shutdown();

  const traces = collector.received.find((r) => r.path === "/v1/traces");
  const exported = collector.received.find((r) => r.path === "/v1/metrics");
  t.truthy(traces, "spans were exported to /v1/traces");
  t.truthy(exported, "metrics were exported to /v1/metrics");
  t.regex(traces!.contentType ?? "", /json/);
  const body = JSON.parse(traces!.body);
  const resource = Object.fromEntries(
    body.resourceSpans[0].resource.attributes.map((a: { key: string; value: { stringValue?: string } }) => [a.key, a.value.stringValue]),
  );
  t.is(resource["service.name"], "from-env");
  t.is(resource["service.version"], "1.2.3");
  t.is(resource["deployment.environment.name"], "test lab");
  const span = body.resourceSpans[0].scopeSpans[0].spans[0];
  t.is(span.name, "unit-of-work");
  t.is(span.traceId, TRACE_ID, "the extracted parent's trace continues");
  t.true(exported!.body.includes("work.done"));
});

test.serial("zipkin: OTEL_TRACES_EXPORTER=zipkin with OTEL_EXPORTER_ZIPKIN_ENDPOINT", async (t) => {
  const collector = await fakeCollector(t);
  const telemetry = await startTelemetry({
    serviceName: "zipkin-test",
    exporter: "none",
    env: { OTEL_TRACES_EXPORTER: "zipkin", OTEL_EXPORTER_ZIPKIN_ENDPOINT: `${collector.url}/api/v2/spans` },
    logger: memoryLogger(),
  });
  trace.getTracer("test").startSpan("zipkin-span").end();
  await telemetry.shutdown();
  const spans = collector.received.find((r) => r.path === "/api/v2/spans");
  t.truthy(spans);
  const [first] = JSON.parse(spans!.body);
  t.is(first.name, "zipkin-span");
  t.is(first.localEndpoint.serviceName, "zipkin-test");
});

test.serial("none: no exporter, yet context and traceparent still flow across hops", async (t) => {
  const logger = memoryLogger();
  const telemetry = await startTelemetry({ serviceName: "quiet", exporter: "none", logger });
  t.teardown(() => telemetry.shutdown());

  // An HTTP-style record in, a NATS-style header object out.
  const outgoing = new Map<string, string>();
  const natsHeaders = { set: (k: string, v: string) => void outgoing.set(k, v), get: (k: string) => outgoing.get(k) ?? "" };
  const result = withExtractedContext({ traceparent: PARENT }, () => {
    t.is(trace.getActiveSpan()?.spanContext().traceId, TRACE_ID);
    injectTraceHeaders(natsHeaders);
    return injectTraceHeaders({} as Record<string, string>);
  });
  t.is(result.traceparent, PARENT, "no recording span in between, so the parent passes on as is");
  t.is(outgoing.get("traceparent"), PARENT);
  withExtractedContext(natsHeaders, () => t.is(trace.getActiveSpan()?.spanContext().traceId, TRACE_ID));
  withExtractedContext(new Headers({ TraceParent: PARENT }), () => t.is(trace.getActiveSpan()?.spanContext().traceId, TRACE_ID));
  t.deepEqual(
    logger.lines.filter((l) => l.level === "warn"),
    [],
  );
});

test.serial("OTEL_SDK_DISABLED=true: nothing is registered", async (t) => {
  const collector = await fakeCollector(t);
  const telemetry = await startTelemetry({
    serviceName: "off",
    exporter: "otlp",
    endpoint: collector.url,
    env: { OTEL_SDK_DISABLED: "true" },
    logger: memoryLogger(),
  });
  const carrier = withExtractedContext({ traceparent: PARENT }, () => injectTraceHeaders({} as Record<string, string>));
  t.deepEqual(carrier, {});
  trace.getTracer("test").startSpan("dropped").end();
  await telemetry.shutdown();
  t.deepEqual(collector.received, []);
});

test.serial("a second start while running is refused; after shutdown it works again", async (t) => {
  const first = await startTelemetry({ serviceName: "a", exporter: "none", logger: memoryLogger() });
  await t.throwsAsync(startTelemetry({ serviceName: "b", exporter: "none", logger: memoryLogger() }), {
    message: /already running/,
  });
  await first.shutdown();
  const second = await startTelemetry({ serviceName: "b", exporter: "none", logger: memoryLogger() });
  await second.shutdown();
  t.pass();
});
