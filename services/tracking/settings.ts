// Asset tracking's settings: its thresholds, API keys, event stream, webhooks, and where its front
// listens and a gateway reaches it. The README's configuration table is generated from these.
import { z } from "zod";
import { setting } from "../runtime/config/index.js";

/** The roles an API key can carry, lowest first: ingest < operator. */
export const trackingRoles = ["ingest", "operator"] as const;

export const trackingSettings = z.object({
  services: z.object({
    tracking: z.object({
      address: setting.url({
        protocols: ["http:"],
        list: true,
        default: "http://127.0.0.1:9090",
        description:
          "Where a gateway-only process reaches the tracking service (gRPC over HTTP/2); comma-separated for several instances: calls are balanced over them, and one refusing connections is skipped for 5 s.",
      }),
    }),
  }),
  fronts: z.object({
    tracking: z.object({
      port: setting.port({ default: 8080, description: "Port of the asset tracking REST front (/api)." }),
    }),
  }),
  tracking: z.object({
    defaultSpeedThresholdKmh: setting.int({
      min: 1,
      max: 5000,
      default: 120,
      description: "Speed alert threshold for devices whose asset sets none, in km/h.",
    }),
    speedAlertCooldownMinutes: setting.int({
      min: 0,
      max: 1440,
      default: 5,
      description: "After a speed alert, the same device raises no other for this long (one episode, one alert).",
    }),
    simulationEnabled: setting.bool({ default: true, description: "Whether POST /api/observations/simulate runs (403 when off)." }),
    exportMaxRows: setting.int({
      min: 1,
      max: 1_000_000,
      default: 50_000,
      description: "Most rows in one csv/geojson/gpx export; a capped export says so in X-Export-Truncated.",
    }),
  }),
  auth: z.object({
    apiKeys: setting.list({
      fields: [
        { name: "Name", required: true },
        { name: "Role", required: true, values: trackingRoles },
        { name: "Key", required: true, secret: true, minLength: 16 },
      ],
      map: (item) => ({ name: item.Name!, role: item.Role! as (typeof trackingRoles)[number], key: item.Key! }),
      secret: true,
      description:
        "API keys accepted in `X-Api-Key`: a list of `{ Name, Role, Key }`, Role `ingest` or `operator`, Key at least 16 characters. None: the tracking API is open (and binds to loopback only).",
    }),
  }),
  sseToken: z.object({
    ttlMinutes: setting.int({
      min: 1,
      max: 1440,
      default: 10,
      description: "Lifetime of an event stream token from POST /api/events/token, in minutes.",
    }),
  }),
  events: z.object({
    clientBufferSize: setting.int({
      min: 1,
      max: 100_000,
      default: 100,
      description: "Events held for one slow stream client; beyond it the oldest are dropped and a `dropped` event says how many.",
    }),
  }),
  webhooks: z.object({
    endpoints: setting.list({
      fields: [{ name: "Url", required: true }, { name: "Secret", secret: true }, { name: "Events" }],
      map: (item) => ({
        url: item.Url!,
        ...(item.Secret !== undefined ? { secret: item.Secret } : {}),
        events: (item.Events ?? "")
          .split(",")
          .map((type) => type.trim())
          .filter((type) => type !== "" && type !== "*"),
      }),
      secret: true,
      description:
        "Webhook destinations: a list of `{ Url, Secret, Events }`; Secret is the Standard Webhooks key (`whsec_` + base64), Events a comma-separated filter of event types (unset or `*`: all).",
    }),
    signingEnabled: setting.bool({
      default: true,
      description: "Sign deliveries (webhook-id, webhook-timestamp, webhook-signature). Off only when set to false explicitly.",
    }),
    timeoutSeconds: setting.int({ min: 1, max: 300, default: 10, description: "How long one delivery attempt waits for the receiver." }),
    maxAttempts: setting.int({
      min: 1,
      max: 100,
      default: 4,
      description: "Attempts per event and endpoint, the first included, before the delivery is given up.",
    }),
    retryInitialDelayMs: setting.int({
      min: 1,
      max: 3_600_000,
      default: 1000,
      description:
        "Delay before the first retry; each later one doubles it (with jitter), up to Webhooks:RetryMaxDelayMs. A Retry-After from the receiver wins.",
    }),
    retryMaxDelayMs: setting.int({ min: 1, max: 86_400_000, default: 30_000, description: "Longest delay between two attempts." }),
    allowLoopback: setting.bool({
      default: false,
      description: "Allow destinations that resolve to loopback addresses (refused otherwise, against SSRF).",
    }),
    allowPrivateNetworks: setting.bool({
      default: false,
      description: "Allow destinations that resolve to private, link-local or other non-public addresses.",
    }),
  }),
});

export type TrackingSettings = z.output<typeof trackingSettings>;
export type WebhookEndpointConfig = TrackingSettings["webhooks"]["endpoints"][number];

/** Keys of earlier releases, still read, with a warning naming their new key. */
export const trackingRenamedSettings = { "Gateway:Tracking:Port": "Fronts:Tracking:Port" };
