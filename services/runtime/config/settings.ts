// Every setting Meshwork reads: its key, type, default and documentation. The loader, the
// `meshwork --help` text and the README's configuration table all come from this one list.

export type SettingType =
  | { kind: "string" }
  /** A file system path; a relative one is resolved against the working directory at load. */
  | { kind: "path" }
  | { kind: "int"; min?: number; max?: number }
  | { kind: "bool" }
  | { kind: "enum"; values: readonly string[] }
  | { kind: "url"; protocols: readonly string[]; list?: boolean }
  | { kind: "list"; fields: readonly ListField[] };

/**
 * One field of the records in a list setting. A list is given as a JSON array in appsettings, as
 * JSON text in a variable or flag (`Auth__ApiKeys='[{"Name":"ops",...}]'`), or one field at a
 * time with an index (`Auth__ApiKeys__0__Key=...`). Field names are matched case-insensitively.
 */
export interface ListField {
  /** PascalCase, as written in appsettings.json. */
  name: string;
  required?: boolean;
  /** Never shown: redacted in `describeConfig`, errors and logs. */
  secret?: boolean;
  /** Allowed values, when the field is an enumeration. */
  values?: readonly string[];
  minLength?: number;
}

export interface Setting {
  /** `Section:Key`, the form used in appsettings.json paths and in messages. */
  key: string;
  type: SettingType;
  /** Undefined: the setting is unset unless configured. */
  default?: string | number | boolean;
  /** Extra environment variable names accepted besides `Section__Key` (e.g. DATABASE_URL). */
  aliases?: readonly string[];
  /** Redacted wherever configuration is shown. */
  secret?: boolean;
  description: string;
}

const port = { kind: "int", min: 0, max: 65535 } as const;

export const settings: readonly Setting[] = [
  {
    key: "Data:Dir",
    type: { kind: "path" },
    default: ".data",
    description:
      "Directory for local state: the embedded PostgreSQL data lives in `<dir>/pg`. A relative path is resolved against the working directory.",
  },
  {
    key: "Database:Url",
    type: { kind: "url", protocols: ["postgres:", "postgresql:"] },
    aliases: ["DATABASE_URL"],
    secret: true,
    description: "PostgreSQL connection URL. Unset: an embedded PostgreSQL (PGlite) under Data:Dir.",
  },
  {
    key: "Database:PoolSize",
    type: { kind: "int", min: 1, max: 200 },
    default: 10,
    description: "Connections per process to a real PostgreSQL (the embedded one takes one).",
  },
  {
    key: "Nats:Url",
    type: { kind: "url", protocols: ["nats:", "tls:", "ws:", "wss:"], list: true },
    aliases: ["NATS_URL"],
    secret: true,
    description: "NATS server(s) with JetStream, comma-separated for a cluster. Unset: an in-process bus with the same subjects.",
  },
  {
    key: "Outbox:PollIntervalMs",
    type: { kind: "int", min: 10, max: 60_000 },
    default: 1000,
    description: "How often the outbox relay looks for unpublished events it was not told about.",
  },
  {
    key: "Logging:Level",
    type: { kind: "enum", values: ["trace", "debug", "info", "warn", "error", "fatal", "silent"] },
    default: "info",
    description: "Minimum log level (JSON lines on stdout).",
  },
  {
    key: "Services:Host",
    type: { kind: "string" },
    default: "127.0.0.1",
    description: "Address the service host (gRPC, gRPC-web, Connect on h2c) binds to.",
  },
  {
    key: "Services:Port",
    type: port,
    default: 9090,
    description: "Port of the service host; 0 picks a free port.",
  },
  {
    key: "Services:Tracking:Address",
    type: { kind: "url", protocols: ["http:"] },
    default: "http://127.0.0.1:9090",
    description: "Where a gateway-only process reaches the tracking service (gRPC over HTTP/2).",
  },
  {
    key: "Gateway:Host",
    type: { kind: "string" },
    default: "127.0.0.1",
    description: "Address every REST front binds to. Use 0.0.0.0 to accept remote clients.",
  },
  {
    key: "Gateway:BodyLimitBytes",
    type: { kind: "int", min: 1024, max: 64 * 1024 * 1024 },
    default: 1024 * 1024,
    description: "Largest accepted request body; a bigger one answers 413.",
  },
  {
    key: "Gateway:Tracking:Port",
    type: port,
    default: 8080,
    description: "Port of the asset tracking REST front (/api).",
  },
  {
    key: "Gateway:Protection:Port",
    type: port,
    default: 8081,
    description: "Port of the device protection REST front (/v1).",
  },
  {
    key: "Gateway:Agents:Port",
    type: port,
    default: 18789,
    description: "Port of the agent gateway REST front.",
  },
  {
    key: "Tracking:DefaultSpeedThresholdKmh",
    type: { kind: "int", min: 1, max: 5000 },
    default: 120,
    description: "Speed alert threshold for devices whose asset sets none, in km/h.",
  },
  {
    key: "Tracking:SpeedAlertCooldownMinutes",
    type: { kind: "int", min: 0, max: 1440 },
    default: 5,
    description: "After a speed alert, the same device raises no other for this long (one episode, one alert).",
  },
  {
    key: "Tracking:SimulationEnabled",
    type: { kind: "bool" },
    default: true,
    description: "Whether POST /api/observations/simulate runs (403 when off).",
  },
  {
    key: "Tracking:ExportMaxRows",
    type: { kind: "int", min: 1, max: 1_000_000 },
    default: 50_000,
    description: "Most rows in one csv/geojson/gpx export; a capped export says so in X-Export-Truncated.",
  },
  {
    key: "Auth:ApiKeys",
    type: {
      kind: "list",
      fields: [
        { name: "Name", required: true },
        { name: "Role", required: true, values: ["ingest", "operator"] },
        { name: "Key", required: true, secret: true, minLength: 16 },
      ],
    },
    secret: true,
    description:
      "API keys accepted in `X-Api-Key`: a list of `{ Name, Role, Key }`, Role `ingest` or `operator`, Key at least 16 characters. None: the tracking API is open (and binds to loopback only).",
  },
  {
    key: "Auth:AllowAnonymousPublicBind",
    type: { kind: "bool" },
    default: false,
    description:
      "Let the fronts bind to a non-loopback Gateway:Host while no API key is configured (anyone who can reach it may call everything).",
  },
  {
    key: "SseToken:TtlMinutes",
    type: { kind: "int", min: 1, max: 1440 },
    default: 10,
    description: "Lifetime of an event stream token from POST /api/events/token, in minutes.",
  },
  {
    key: "Events:ClientBufferSize",
    type: { kind: "int", min: 1, max: 100_000 },
    default: 100,
    description: "Events held for one slow stream client; beyond it the oldest are dropped and a `dropped` event says how many.",
  },
  {
    key: "Events:ReplayWindow",
    type: { kind: "int", min: 0, max: 1_000_000 },
    default: 10_000,
    description: "Events the in-process bus keeps for `Last-Event-ID` resume (JetStream keeps its own stream).",
  },
  {
    key: "Gateway:SseKeepAliveSeconds",
    type: { kind: "int", min: 1, max: 3600 },
    default: 15,
    description: "Interval of the keep-alive comment on open server-sent event streams.",
  },
  {
    key: "Webhooks:Endpoints",
    type: {
      kind: "list",
      fields: [{ name: "Url", required: true }, { name: "Secret", secret: true }, { name: "Events" }],
    },
    secret: true,
    description:
      "Webhook destinations: a list of `{ Url, Secret, Events }`; Secret is the Standard Webhooks key (`whsec_` + base64), Events a comma-separated filter of event types (unset or `*`: all).",
  },
  {
    key: "Webhooks:SigningEnabled",
    type: { kind: "bool" },
    default: true,
    description: "Sign deliveries (webhook-id, webhook-timestamp, webhook-signature). Off only when set to false explicitly.",
  },
  {
    key: "Webhooks:TimeoutSeconds",
    type: { kind: "int", min: 1, max: 300 },
    default: 10,
    description: "How long one delivery attempt waits for the receiver.",
  },
  {
    key: "Webhooks:MaxAttempts",
    type: { kind: "int", min: 1, max: 100 },
    default: 4,
    description: "Attempts per event and endpoint, the first included, before the delivery is given up.",
  },
  {
    key: "Webhooks:RetryInitialDelayMs",
    type: { kind: "int", min: 1, max: 3_600_000 },
    default: 1000,
    description:
      "Delay before the first retry; each later one doubles it (with jitter), up to Webhooks:RetryMaxDelayMs. A Retry-After from the receiver wins.",
  },
  {
    key: "Webhooks:RetryMaxDelayMs",
    type: { kind: "int", min: 1, max: 86_400_000 },
    default: 30_000,
    description: "Longest delay between two attempts.",
  },
  {
    key: "Webhooks:AllowLoopback",
    type: { kind: "bool" },
    default: false,
    description: "Allow destinations that resolve to loopback addresses (refused otherwise, against SSRF).",
  },
  {
    key: "Webhooks:AllowPrivateNetworks",
    type: { kind: "bool" },
    default: false,
    description: "Allow destinations that resolve to private, link-local or other non-public addresses.",
  },
  {
    key: "Telemetry:Exporter",
    type: { kind: "enum", values: ["console", "otlp", "zipkin", "none"] },
    default: "console",
    description: "Where traces and metrics go. OTEL_TRACES_EXPORTER overrides it.",
  },
  {
    key: "Telemetry:OtlpProtocol",
    type: { kind: "enum", values: ["grpc", "http"] },
    default: "grpc",
    description: "OTLP transport. OTEL_EXPORTER_OTLP_PROTOCOL overrides it.",
  },
  {
    key: "Telemetry:Endpoint",
    type: { kind: "url", protocols: ["http:", "https:"] },
    description: "OTLP or Zipkin endpoint. Unset: the exporter's default. OTEL_EXPORTER_OTLP_ENDPOINT overrides it.",
  },
  {
    key: "Telemetry:ServiceName",
    type: { kind: "string" },
    default: "meshwork",
    description: "service.name on every span and metric. OTEL_SERVICE_NAME overrides it.",
  },
];
