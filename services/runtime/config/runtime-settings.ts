// The settings of the mesh itself: local state, database, bus, outbox, logging, the service host,
// the REST fronts and telemetry. Each service module declares its own beside these.
import { z } from "zod";
import { setting } from "./setting.js";

export const runtimeSettings = z.object({
  data: z.object({
    dir: setting.path({
      default: ".data",
      description:
        "Directory for local state: the embedded PostgreSQL data lives in `<dir>/pg`. A relative path is resolved against the working directory.",
    }),
  }),
  database: z.object({
    url: setting.url({
      protocols: ["postgres:", "postgresql:"],
      aliases: ["DATABASE_URL"],
      secret: true,
      description: "PostgreSQL connection URL. Unset: an embedded PostgreSQL (PGlite) under Data:Dir.",
    }),
    poolSize: setting.int({
      min: 1,
      max: 200,
      default: 10,
      description: "Connections per process to a real PostgreSQL (the embedded one takes one).",
    }),
  }),
  nats: z.object({
    url: setting.url({
      protocols: ["nats:", "tls:", "ws:", "wss:"],
      list: true,
      aliases: ["NATS_URL"],
      secret: true,
      description: "NATS server(s) with JetStream, comma-separated for a cluster. Unset: an in-process bus with the same subjects.",
    }),
  }),
  outbox: z.object({
    pollIntervalMs: setting.int({
      min: 10,
      max: 60_000,
      default: 1000,
      description: "How often the outbox relay looks for unpublished events it was not told about.",
    }),
  }),
  events: z.object({
    replayWindow: setting.int({
      min: 0,
      max: 1_000_000,
      default: 10_000,
      description: "Events the in-process bus keeps for `Last-Event-ID` resume (JetStream keeps its own stream).",
    }),
  }),
  logging: z.object({
    level: setting.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"], {
      default: "info",
      description: "Minimum log level (JSON lines on stdout).",
    }),
    accessLevel: setting.enum(["info", "debug", "trace", "silent"], {
      default: "info",
      description:
        "Level of the REST fronts' line per request (and per request refused before routing); shown when Logging:Level lets it through, never with silent. Server errors (5xx) are logged as errors whatever it says.",
    }),
  }),
  services: z.object({
    host: setting.string({ default: "127.0.0.1", description: "Address the service host (gRPC, gRPC-web, Connect on h2c) binds to." }),
    port: setting.port({ default: 9090, description: "Port of the service host; 0 picks a free port." }),
    trustedProxies: setting.string({
      description:
        "Comma-separated addresses of gateways whose calls to the service host carry the REST client's address (for per-client limits); any other caller counts as the client itself.",
    }),
  }),
  fronts: z.object({
    host: setting.string({
      default: "127.0.0.1",
      description: "Address every REST front binds to (unless its service names its own). Use 0.0.0.0 to accept remote clients.",
    }),
    bodyLimitBytes: setting.int({
      min: 1024,
      max: 64 * 1024 * 1024,
      default: 1024 * 1024,
      description: "Largest accepted request body; a bigger one answers 413.",
    }),
    sseKeepAliveSeconds: setting.int({
      min: 1,
      max: 3600,
      default: 15,
      description: "Interval of the keep-alive comment on open server-sent event streams.",
    }),
    headersTimeoutSeconds: setting.int({
      min: 1,
      max: 600,
      default: 10,
      description: "Time a client has to send the request line and headers; then 408 and the connection is closed.",
    }),
    requestTimeoutSeconds: setting.int({
      min: 1,
      max: 3600,
      default: 30,
      description:
        "Time a client has to send the whole request (not the answer: event streams are never cut); raised to Fronts:HeadersTimeoutSeconds if lower.",
    }),
    maxConnections: setting.int({
      min: 1,
      max: 1_000_000,
      default: 10_000,
      description: "Open connections per front; more are closed at once.",
    }),
    maxHeaderBytes: setting.int({
      min: 1024,
      max: 1024 * 1024,
      default: 16_384,
      description: "Largest request line plus headers; a bigger one answers 431 in the front's error style.",
    }),
    unavailableRetryAfterSeconds: setting.int({
      min: 1,
      max: 3600,
      default: 5,
      description: "Retry-After on 503 answers (a database or service that cannot be reached).",
    }),
  }),
  auth: z.object({
    allowAnonymousPublicBind: setting.bool({
      default: false,
      description:
        "Let a front and the service host bind to a non-loopback address while a service on them has no credential configured (anyone who can reach it may call everything).",
    }),
  }),
  telemetry: z.object({
    exporter: setting.enum(["console", "otlp", "zipkin", "none"], {
      default: "console",
      description: "Where traces and metrics go. OTEL_TRACES_EXPORTER overrides it.",
    }),
    otlpProtocol: setting.enum(["grpc", "http"], {
      default: "grpc",
      description: "OTLP transport. OTEL_EXPORTER_OTLP_PROTOCOL overrides it.",
    }),
    endpoint: setting.url({
      protocols: ["http:", "https:"],
      description: "OTLP or Zipkin endpoint. Unset: the exporter's default. OTEL_EXPORTER_OTLP_ENDPOINT overrides it.",
    }),
    serviceName: setting.string({
      default: "meshwork",
      description: "service.name on every span and metric. OTEL_SERVICE_NAME overrides it.",
    }),
    consoleSpans: setting.enum(["modules", "all", "none"], {
      default: "modules",
      description:
        "Spans the console exporter prints: `modules` only those of the low-volume instrumentation scopes service modules declare, `all` every span (a line per RPC, for debugging), `none` none. Console metrics print at most once a minute. OTLP and Zipkin export every span.",
    }),
  }),
});

export type RuntimeSettings = z.output<typeof runtimeSettings>;

/** The mesh's own settings that were renamed so that documented service settings cannot collide. */
export const renamedRuntimeSettings: Readonly<Record<string, string>> = {
  "Gateway:Host": "Fronts:Host",
  "Gateway:BodyLimitBytes": "Fronts:BodyLimitBytes",
  "Gateway:SseKeepAliveSeconds": "Fronts:SseKeepAliveSeconds",
};
