// How settings and OTEL_* variables combine into exporters, table-driven.
import test from "ava";
import { planTelemetry, type TelemetrySettings } from "./telemetry-config.js";

const cases: { name: string; settings: Omit<TelemetrySettings, "serviceName">; traces: unknown; metrics: unknown }[] = [
  {
    name: "defaults: console for both",
    settings: {},
    traces: [{ kind: "console", scopes: [] }],
    metrics: [{ kind: "console", intervalMs: 60_000 }],
  },
  {
    name: "none means none",
    settings: { exporter: "none" },
    traces: [],
    metrics: [],
  },
  {
    name: "zipkin has no metrics",
    settings: { exporter: "zipkin", endpoint: "http://zipkin:9411/api/v2/spans" },
    traces: [{ kind: "zipkin", url: "http://zipkin:9411/api/v2/spans" }],
    metrics: [],
  },
  {
    name: "otlp http appends the signal paths to the base URL",
    settings: { exporter: "otlp", otlpProtocol: "http", endpoint: "http://collector:4318/" },
    traces: [{ kind: "otlp", protocol: "http", url: "http://collector:4318/v1/traces" }],
    metrics: [{ kind: "otlp", protocol: "http", url: "http://collector:4318/v1/metrics", intervalMs: 60_000 }],
  },
  {
    name: "otlp grpc uses the endpoint as given",
    settings: { exporter: "otlp", otlpProtocol: "grpc", endpoint: "http://collector:4317" },
    traces: [{ kind: "otlp", protocol: "grpc", url: "http://collector:4317" }],
    metrics: [{ kind: "otlp", protocol: "grpc", url: "http://collector:4317", intervalMs: 60_000 }],
  },
  {
    name: "OTEL_* wins over settings",
    settings: {
      exporter: "otlp",
      otlpProtocol: "grpc",
      endpoint: "http://from-settings:4317",
      env: {
        OTEL_TRACES_EXPORTER: "otlp,console",
        OTEL_METRICS_EXPORTER: "none",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://from-env:4318",
      },
    },
    traces: [
      { kind: "otlp", protocol: "http", url: "http://from-env:4318/v1/traces" },
      { kind: "console", scopes: [] },
    ],
    metrics: [],
  },
  {
    name: "per-signal variables win over the generic ones",
    settings: {
      exporter: "otlp",
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://generic:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces-only:4318/custom",
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "grpc",
      },
    },
    traces: [{ kind: "otlp", protocol: "http", url: "http://traces-only:4318/custom" }],
    metrics: [{ kind: "otlp", protocol: "grpc", url: "http://generic:4318", intervalMs: 60_000 }],
  },
  {
    name: "empty variables count as unset; a settings endpoint is not lent to another exporter",
    settings: { exporter: "otlp", endpoint: "http://collector:4318", env: { OTEL_TRACES_EXPORTER: "zipkin", OTEL_METRICS_EXPORTER: " " } },
    traces: [{ kind: "zipkin", url: undefined }],
    metrics: [{ kind: "otlp", protocol: "http", url: "http://collector:4318/v1/metrics", intervalMs: 60_000 }],
  },
];

for (const { name, settings, traces, metrics } of cases) {
  test(name, (t) => {
    const plan = planTelemetry({ serviceName: "svc", ...settings });
    t.deepEqual(plan.traces, traces);
    t.deepEqual(plan.metrics, metrics);
    t.deepEqual(plan.problems, []);
    t.false(plan.disabled);
  });
}

test("service name: OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, then the setting", (t) => {
  t.is(planTelemetry({ serviceName: "svc" }).resourceAttributes["service.name"], "svc");
  t.is(
    planTelemetry({ serviceName: "svc", env: { OTEL_RESOURCE_ATTRIBUTES: "service.name=attr,team=geo" } }).resourceAttributes[
      "service.name"
    ],
    "attr",
  );
  const plan = planTelemetry({
    serviceName: "svc",
    env: { OTEL_SERVICE_NAME: "env", OTEL_RESOURCE_ATTRIBUTES: "service.name=attr,team=geo" },
  });
  t.is(plan.resourceAttributes["service.name"], "env");
  t.is(plan.resourceAttributes.team, "geo");
});

test("unsupported values are reported, not fatal", (t) => {
  const plan = planTelemetry({
    serviceName: "svc",
    exporter: "otlp",
    env: {
      OTEL_TRACES_EXPORTER: "jaeger,otlp",
      OTEL_METRICS_EXPORTER: "prometheus",
      OTEL_EXPORTER_OTLP_PROTOCOL: "carrier-pigeon",
      OTEL_METRIC_EXPORT_INTERVAL: "soon",
    },
  });
  t.deepEqual(plan.traces, [{ kind: "otlp", protocol: "http", url: undefined }]);
  t.deepEqual(plan.metrics, []);
  t.is(plan.metricsIntervalMs, 60_000);
  t.is(plan.problems.length, 4);
});

test("OTEL_SDK_DISABLED and OTEL_METRIC_EXPORT_INTERVAL", (t) => {
  t.true(planTelemetry({ serviceName: "svc", env: { OTEL_SDK_DISABLED: "TRUE" } }).disabled);
  t.false(planTelemetry({ serviceName: "svc", env: { OTEL_SDK_DISABLED: "false" } }).disabled);
  t.is(planTelemetry({ serviceName: "svc", metricsIntervalMs: 5000 }).metricsIntervalMs, 5000);
  t.is(
    planTelemetry({ serviceName: "svc", metricsIntervalMs: 5000, env: { OTEL_METRIC_EXPORT_INTERVAL: "1500" } }).metricsIntervalMs,
    1500,
  );
});

test("console spans: the declared scopes under modules (the default), every span under all, none under none", (t) => {
  const consoleOf = (settings: Omit<TelemetrySettings, "serviceName">) =>
    planTelemetry({ serviceName: "svc", ...settings }).traces.find((p) => p.kind === "console");
  t.deepEqual(consoleOf({}), { kind: "console", scopes: [] }, "no module declares a scope: nothing to print");
  t.deepEqual(consoleOf({ consoleSpanScopes: ["agents.turns", "agents.tools", "agents.turns"] }), {
    kind: "console",
    scopes: ["agents.turns", "agents.tools"],
  });
  t.deepEqual(consoleOf({ consoleSpans: "all", consoleSpanScopes: ["agents.turns"] }), { kind: "console", scopes: "all" });
  t.deepEqual(consoleOf({ consoleSpans: "none", consoleSpanScopes: ["agents.turns"] }), { kind: "console", scopes: [] });
  // Chosen through OTEL_TRACES_EXPORTER, the console exporter is filtered the same way; OTLP is not.
  const plan = planTelemetry({
    serviceName: "svc",
    exporter: "otlp",
    consoleSpanScopes: ["agents.turns"],
    env: { OTEL_TRACES_EXPORTER: "otlp,console" },
  });
  t.deepEqual(plan.traces, [
    { kind: "otlp", protocol: "http", url: undefined },
    { kind: "console", scopes: ["agents.turns"] },
  ]);
});

test("console metrics print at most once a minute: a shorter interval is raised for console only, with a problem", (t) => {
  const plan = planTelemetry({
    serviceName: "svc",
    env: { OTEL_METRICS_EXPORTER: "console,otlp", OTEL_METRIC_EXPORT_INTERVAL: "1000", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" },
  });
  t.is(plan.metricsIntervalMs, 1000);
  t.deepEqual(plan.metrics, [
    { kind: "console", intervalMs: 60_000 },
    { kind: "otlp", protocol: "http", url: "http://c:4318/v1/metrics", intervalMs: 1000 },
  ]);
  t.deepEqual(plan.problems, [
    "OTEL_METRIC_EXPORT_INTERVAL=1000 is below the console metric exporter's 60000 ms; console metrics print every 60000 ms",
  ]);

  const fromSettings = planTelemetry({ serviceName: "svc", metricsIntervalMs: 5000 });
  t.deepEqual(fromSettings.metrics, [{ kind: "console", intervalMs: 60_000 }]);
  t.deepEqual(fromSettings.problems, [
    "metricsIntervalMs=5000 is below the console metric exporter's 60000 ms; console metrics print every 60000 ms",
  ]);

  const longer = planTelemetry({ serviceName: "svc", env: { OTEL_METRIC_EXPORT_INTERVAL: "120000" } });
  t.deepEqual(longer.metrics, [{ kind: "console", intervalMs: 120_000 }], "a longer interval is kept");
  t.deepEqual(longer.problems, []);
});

test("OTLP metrics keep a short interval, and nothing is reported when no console reader is planned", (t) => {
  const plan = planTelemetry({ serviceName: "svc", exporter: "otlp", env: { OTEL_METRIC_EXPORT_INTERVAL: "1500" } });
  t.deepEqual(plan.metrics, [{ kind: "otlp", protocol: "http", url: undefined, intervalMs: 1500 }]);
  t.deepEqual(plan.problems, []);
});
