// Gateway:Telemetry:*: the agent gateway's own traces and metrics (App.* scopes), apart from the
// mesh's Telemetry:* (RPC spans). Every one of them is hot-reloaded.
import { z } from "zod";
import { setting } from "../../runtime/config/index.js";

export const gatewayTelemetrySettings = z.object({
  enabled: setting.bool({ default: true, reloadable: true, description: "false turns off the agent gateway's spans and metrics." }),
  serviceName: setting.string({
    default: "app",
    reloadable: true,
    description: "service.name of the agent gateway's spans and metrics. OTEL_SERVICE_NAME overrides it.",
  }),
  exporter: setting.enum(["console", "otlp", "zipkin"], {
    default: "console",
    reloadable: true,
    description:
      "Where they go: console (stdout), otlp, or zipkin (traces; metrics then go to the console). OTEL_EXPORTER_OTLP_ENDPOINT switches to otlp.",
  }),
  otlpProtocol: setting.enum(["grpc", "http"], {
    default: "grpc",
    reloadable: true,
    description:
      "OTLP transport: grpc (port 4317) or http (port 4318, JSON to `<Endpoint>/v1/traces` and `/v1/metrics`). OTEL_EXPORTER_OTLP_PROTOCOL overrides it.",
  }),
  endpoint: setting.url({
    protocols: ["http:", "https:"],
    reloadable: true,
    description: "The exporter's endpoint. Unset: the exporter's default. OTEL_EXPORTER_OTLP_ENDPOINT overrides it.",
  }),
});

export type GatewayTelemetrySettings = z.output<typeof gatewayTelemetrySettings>;
