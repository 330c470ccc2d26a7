// Decides what telemetry does from Meshwork's settings and the standard OTEL_* variables.
// Precedence, as the OpenTelemetry SDKs have it: an OTEL_* variable that is set (non-empty)
// wins over the matching Meshwork setting, which wins over the default.
//
//   OTEL_SDK_DISABLED=true                 no SDK at all (no spans, metrics or propagation)
//   OTEL_SERVICE_NAME                      over OTEL_RESOURCE_ATTRIBUTES service.name, over serviceName
//   OTEL_RESOURCE_ATTRIBUTES               k=v,k=v resource attributes (percent-decoded)
//   OTEL_TRACES_EXPORTER                   otlp | zipkin | console | none (comma list), over exporter
//   OTEL_METRICS_EXPORTER                  otlp | console | none (comma list), over exporter
//   OTEL_EXPORTER_OTLP_PROTOCOL            grpc | http/protobuf | http/json, over otlpProtocol
//   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL  per signal, over the above
//   OTEL_EXPORTER_OTLP_ENDPOINT            base URL (http adds /v1/traces, /v1/metrics), over endpoint
//   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT  per signal, used as given, over the above
//   OTEL_EXPORTER_ZIPKIN_ENDPOINT          over endpoint when traces go to zipkin
//   OTEL_METRIC_EXPORT_INTERVAL            milliseconds, over metricsIntervalMs (the console
//                                          exporter prints at most once a minute whatever it says)
//
// Other OTEL_* variables (samplers, batch sizes, limits) are read by the SDK itself.
//
// The console exporter is for people reading a terminal, so it prints little: spans only from the
// instrumentation scopes that service modules declare as low-volume (consoleSpans `modules`), never
// a line per RPC unless asked (`all`), and metrics at most once a minute. OTLP and Zipkin are meant
// for volume and export every span at the configured interval.

export type TelemetryExporter = "console" | "otlp" | "zipkin" | "none";
export type OtlpProtocol = "grpc" | "http";
/** Which spans the console exporter prints: the declared scopes' (`modules`), every one, or none. */
export type ConsoleSpans = "modules" | "all" | "none";

/** The console metric exporter's shortest interval: a terminal gets metrics at most once a minute. */
export const CONSOLE_METRICS_MIN_INTERVAL_MS = 60_000;

export interface TelemetrySettings {
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /** Where traces and metrics go. Default console. Zipkin takes traces only. */
  readonly exporter?: TelemetryExporter;
  /** OTLP transport: gRPC (4317) or HTTP (4318, JSON). Default http, as the OTLP spec has it. */
  readonly otlpProtocol?: OtlpProtocol;
  /** OTLP base URL, or the Zipkin spans URL. Unset: the exporter's default. */
  readonly endpoint?: string;
  /** Metric export interval. Default 60 s; the console exporter never goes below 60 s. */
  readonly metricsIntervalMs?: number;
  /** Which spans the console exporter prints. Default modules. */
  readonly consoleSpans?: ConsoleSpans;
  /**
   * The instrumentation scope names service modules declare as low-volume: under consoleSpans
   * `modules`, the console exporter prints spans from these scopes only. Default none.
   */
  readonly consoleSpanScopes?: readonly string[];
  /** The OTEL_* variables as the config loader found them (this module never reads process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export type TraceExporterPlan =
  /** `scopes`: the instrumentation scopes whose spans are printed, or every span. */
  | { readonly kind: "console"; readonly scopes: readonly string[] | "all" }
  | { readonly kind: "otlp"; readonly protocol: OtlpProtocol; readonly url: string | undefined }
  | { readonly kind: "zipkin"; readonly url: string | undefined };

export type MetricExporterPlan =
  | { readonly kind: "console"; readonly intervalMs: number }
  | { readonly kind: "otlp"; readonly protocol: OtlpProtocol; readonly url: string | undefined; readonly intervalMs: number };

export interface TelemetryPlan {
  readonly disabled: boolean;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly traces: readonly TraceExporterPlan[];
  readonly metrics: readonly MetricExporterPlan[];
  /** The configured metric interval (OTLP uses it; console at least CONSOLE_METRICS_MIN_INTERVAL_MS). */
  readonly metricsIntervalMs: number;
  /** Values that were ignored, for a warning each. */
  readonly problems: readonly string[];
}

const DEFAULT_METRICS_INTERVAL_MS = 60_000;

export function planTelemetry(settings: TelemetrySettings): TelemetryPlan {
  const env = (name: string): string | undefined => {
    const value = settings.env?.[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  const problems: string[] = [];
  const exporter = settings.exporter ?? "console";

  const resourceAttributes: Record<string, string> = parseResourceAttributes(env("OTEL_RESOURCE_ATTRIBUTES"), problems);
  resourceAttributes["service.name"] = env("OTEL_SERVICE_NAME") ?? resourceAttributes["service.name"] ?? settings.serviceName;
  if (settings.serviceVersion !== undefined && resourceAttributes["service.version"] === undefined) {
    resourceAttributes["service.version"] = settings.serviceVersion;
  }

  const protocolFor = (signal: "TRACES" | "METRICS"): OtlpProtocol => {
    const name = env(`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`) ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL` : "OTEL_EXPORTER_OTLP_PROTOCOL";
    const value = env(name);
    if (value === undefined) {
      return settings.otlpProtocol ?? "http";
    }
    if (value === "grpc") {
      return "grpc";
    }
    if (value === "http/protobuf" || value === "http/json") {
      // Only the JSON flavour of the HTTP exporter is installed; collectors take both on 4318.
      return "http";
    }
    problems.push(`${name}=${value} is not grpc, http/protobuf or http/json; using ${settings.otlpProtocol ?? "http"}`);
    return settings.otlpProtocol ?? "http";
  };
  const otlpUrlFor = (signal: "TRACES" | "METRICS", protocol: OtlpProtocol): string | undefined => {
    const specific = env(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);
    if (specific !== undefined) {
      return specific;
    }
    const base = env("OTEL_EXPORTER_OTLP_ENDPOINT") ?? (exporter === "otlp" ? settings.endpoint : undefined);
    if (base === undefined || protocol === "grpc") {
      return base;
    }
    return `${base.replace(/\/+$/, "")}/v1/${signal.toLowerCase()}`;
  };

  const consoleSpans = settings.consoleSpans ?? "modules";
  const consoleScopes: readonly string[] | "all" =
    consoleSpans === "all" ? "all" : consoleSpans === "none" ? [] : [...new Set(settings.consoleSpanScopes ?? [])];

  const traceKinds =
    exporterList("OTEL_TRACES_EXPORTER", env("OTEL_TRACES_EXPORTER"), ["otlp", "zipkin", "console"], problems) ??
    (exporter === "none" ? [] : [exporter]);
  const metricKinds =
    exporterList("OTEL_METRICS_EXPORTER", env("OTEL_METRICS_EXPORTER"), ["otlp", "console"], problems) ??
    (exporter === "none" || exporter === "zipkin" ? [] : [exporter]);

  const traces = traceKinds.map((kind): TraceExporterPlan => {
    switch (kind) {
      case "otlp": {
        const protocol = protocolFor("TRACES");
        return { kind, protocol, url: otlpUrlFor("TRACES", protocol) };
      }
      case "zipkin":
        return {
          kind,
          url: env("OTEL_EXPORTER_ZIPKIN_ENDPOINT") ?? (exporter === "zipkin" ? settings.endpoint : undefined),
        };
      default:
        return { kind: "console", scopes: consoleScopes };
    }
  });

  let metricsIntervalMs = settings.metricsIntervalMs ?? DEFAULT_METRICS_INTERVAL_MS;
  let intervalSource = `metricsIntervalMs=${metricsIntervalMs}`;
  const interval = env("OTEL_METRIC_EXPORT_INTERVAL");
  if (interval !== undefined) {
    const parsed = Number(interval);
    if (Number.isInteger(parsed) && parsed > 0) {
      metricsIntervalMs = parsed;
      intervalSource = `OTEL_METRIC_EXPORT_INTERVAL=${interval}`;
    } else {
      problems.push(`OTEL_METRIC_EXPORT_INTERVAL=${interval} is not a positive integer; using ${metricsIntervalMs}`);
    }
  }
  // A terminal is not a metrics backend: the console exporter prints at most once a minute.
  const consoleIntervalMs = Math.max(metricsIntervalMs, CONSOLE_METRICS_MIN_INTERVAL_MS);
  const metrics = metricKinds.map((kind): MetricExporterPlan => {
    if (kind === "otlp") {
      const protocol = protocolFor("METRICS");
      return { kind, protocol, url: otlpUrlFor("METRICS", protocol), intervalMs: metricsIntervalMs };
    }
    return { kind: "console", intervalMs: consoleIntervalMs };
  });
  if (consoleIntervalMs !== metricsIntervalMs && metrics.some((m) => m.kind === "console")) {
    problems.push(
      `${intervalSource} is below the console metric exporter's ${CONSOLE_METRICS_MIN_INTERVAL_MS} ms; console metrics print every ${consoleIntervalMs} ms`,
    );
  }

  return {
    disabled: env("OTEL_SDK_DISABLED")?.toLowerCase() === "true",
    resourceAttributes,
    traces,
    metrics,
    metricsIntervalMs,
    problems,
  };
}

/** undefined when the variable is unset; [] for "none". Unknown names are dropped with a problem. */
function exporterList<K extends string>(name: string, value: string | undefined, known: readonly K[], problems: string[]): K[] | undefined {
  if (value === undefined) {
    return undefined;
  }
  const items = [
    ...new Set(
      value
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== ""),
    ),
  ];
  if (items.includes("none")) {
    return [];
  }
  const accepted: K[] = [];
  for (const item of items) {
    if ((known as readonly string[]).includes(item)) {
      accepted.push(item as K);
    } else {
      problems.push(`${name}: exporter "${item}" is not supported here (supported: ${known.join(", ")}, none)`);
    }
  }
  return accepted;
}

function parseResourceAttributes(value: string | undefined, problems: string[]): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (value === undefined) {
    return attributes;
  }
  for (const pair of value.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) {
      problems.push(`OTEL_RESOURCE_ATTRIBUTES: "${pair}" is not key=value`);
      continue;
    }
    try {
      attributes[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      problems.push(`OTEL_RESOURCE_ATTRIBUTES: "${pair}" is not validly percent-encoded`);
    }
  }
  return attributes;
}
