// Device protection's settings: where its front listens and a gateway reaches it, accounts and
// tokens, passwords, roles, mail, organization tokens, rate limits and the login lockout. The
// README's table is generated from these.
import { z } from "zod";
import { setting } from "../runtime/config/index.js";
import { smtpSettings } from "../runtime/mail/mail-settings.js";

/** Platform roles, lowest first: user < authority < admin. */
export const protectionRoles = ["user", "authority", "admin"] as const;
export type ProtectionRole = (typeof protectionRoles)[number];

const limit = (name: string, what: string, defaults: { limit: number; windowSeconds: number }) =>
  z.object({
    limit: setting.int({ min: 1, max: 1_000_000, default: defaults.limit, description: `${what}: requests allowed per window.` }),
    windowSeconds: setting.int({
      min: 1,
      max: 86_400 * 30,
      default: defaults.windowSeconds,
      description: `${what}: length of the window of Protection:RateLimits:${name}:Limit, in seconds.`,
    }),
  });

export const protectionSettings = z.object({
  services: z.object({
    protection: z.object({
      address: setting.url({
        protocols: ["http:"],
        list: true,
        default: "http://127.0.0.1:9090",
        description:
          "Where a gateway-only process reaches the device protection service (gRPC over HTTP/2); comma-separated for several instances: calls are balanced over them, and one refusing connections is skipped for 5 s.",
      }),
    }),
  }),
  fronts: z.object({
    protection: z.object({
      port: setting.port({ default: 8081, description: "Port of the device protection REST front (/v1)." }),
    }),
  }),
  protection: z.object({
    publicBaseUrl: setting.url({
      protocols: ["http:", "https:"],
      default: "http://127.0.0.1:8081",
      description: "Base of every URL the device protection service writes.",
    }),
    admins: setting.string({
      description: "Comma-separated e-mails that get the admin role, at registration and at every start.",
    }),
    authorities: setting.string({
      description: "Comma-separated e-mails that get the authority role, at registration and at every start.",
    }),
    smtp: smtpSettings({ from: "Meshwork Protection <no-reply@localhost>" }),
    jwt: z.object({
      issuer: setting.string({ default: "meshwork-protection", description: "`iss` of access tokens (checked on every token)." }),
      audience: setting.string({ default: "meshwork-protection", description: "`aud` of access tokens (checked on every token)." }),
      accessTokenLifetimeSeconds: setting.int({
        min: 1,
        max: 86_400,
        default: 3600,
        description: "Lifetime of an access token (`expires_in`), in seconds.",
      }),
      refreshTokenLifetimeDays: setting.int({ min: 1, max: 365, default: 30, description: "Lifetime of a refresh token, in days." }),
      signingKeyFile: setting.path({
        description:
          "Ed25519 private key (PKCS#8 PEM) that signs access tokens. Unset: one is generated on first start and kept in PostgreSQL, shared by every instance.",
      }),
    }),
    passwords: z.object({
      memoryKiB: setting.int({
        min: 8,
        max: 4 * 1024 * 1024,
        default: 19_456,
        description: "argon2id memory cost of password hashes, in KiB.",
      }),
      iterations: setting.int({ min: 1, max: 100, default: 2, description: "argon2id time cost (passes) of password hashes." }),
    }),
    passwordReset: z.object({
      tokenLifetimeMinutes: setting.int({
        min: 1,
        max: 1440,
        default: 60,
        description: "Lifetime of a mailed password reset token (one use; a newer one supersedes it), in minutes.",
      }),
    }),
    organizations: z.object({
      tokenKeyFile: setting.path({
        description:
          "Secret (at least 32 bytes, e.g. `openssl rand -base64 32`) from which the key that encrypts organization tokens at rest for their QR codes is derived. Unset: a key is generated on first start and kept in PostgreSQL, shared by every instance.",
      }),
    }),
    blocklist: z.object({
      compileIntervalSeconds: setting.int({
        min: 5,
        max: 86_400,
        default: 300,
        description: "How often the blocklist worker compiles the entries into a new signed version (when they changed), in seconds.",
      }),
      retainedVersions: setting.int({
        min: 1,
        max: 10_000,
        default: 100,
        description: "Blocklist versions kept for deltas; a device further behind gets 409 FULL_SYNC_REQUIRED and fetches the full list.",
      }),
      signingKey: setting.string({
        secret: true,
        description:
          "Base64 32-byte Ed25519 seed that signs the blocklist answers. Unset: one is generated on first start and kept in PostgreSQL, shared by every instance.",
      }),
    }),
    federated: z.object({
      apiKeys: setting.list({
        fields: [
          { name: "Name", required: true },
          { name: "Key", required: true, secret: true, minLength: 16 },
        ],
        map: (item) => ({ name: item.Name!, key: item.Key! }),
        secret: true,
        description:
          "API keys accepted in the body of POST /v1/federated/reports: a list of `{ Name, Key }`, Key at least 16 characters (kept hashed in memory). None: every federated report is refused (401).",
      }),
      upstream: setting.url({
        protocols: ["http:", "https:"],
        aliases: ["SVC_FEDERATED_REPORT_UPSTREAM"],
        description:
          "Base URL of an upstream instance that receives this one's agent reports at `<upstream>/v1/federated/reports` (report_type and confidence 0.5, nothing else). Unset: no report leaves the instance.",
      }),
      upstreamApiKey: setting.string({
        secret: true,
        description: "The api_key sent with the reports posted to Protection:Federated:Upstream.",
      }),
      upstreamIntervalSeconds: setting.int({
        min: 5,
        max: 86_400,
        default: 300,
        description: "How often unsent agent reports are posted to Protection:Federated:Upstream (at most 500 per call), in seconds.",
      }),
    }),
    torExits: z.object({
      sourceUrl: setting.url({
        protocols: ["http:", "https:"],
        default: "https://check.torproject.org/torbulkexitlist",
        description: "Where the Tor exit list (one address per line, `#` comments) is fetched at start and on every refresh.",
      }),
      refreshIntervalSeconds: setting.int({
        min: 5,
        max: 7 * 86_400,
        default: 21_600,
        description: "How often the Tor exit list is fetched again, in seconds; a failed or empty fetch keeps the last list.",
      }),
    }),
    billing: z.object({
      enabled: setting.bool({
        default: false,
        aliases: ["SVC_BILLING_ENABLED"],
        description:
          "Whether the hosted billing operations (/v1/billing/*) run; off (self-hosted), each answers 404 BILLING_DISABLED. On, SecretKey, WebhookSecret and the three Prices are required.",
      }),
      processorUrl: setting.url({
        protocols: ["http:", "https:"],
        default: "https://api.stripe.com",
        description: "Base URL of the payment processor (Stripe's HTTP API, or anything speaking its wire protocol).",
      }),
      secretKey: setting.string({
        secret: true,
        description: "The processor's secret key, sent as `Authorization: Bearer` and nowhere else.",
      }),
      webhookSecret: setting.string({
        secret: true,
        description: "The webhook endpoint's signing secret (the whole `whsec_…` string) that Stripe-Signature headers are checked with.",
      }),
      webhookToleranceSeconds: setting.int({
        min: 1,
        max: 86_400,
        default: 300,
        description: "Largest difference between a webhook's signed timestamp and now, in seconds.",
      }),
      prices: z.object({
        standard: setting.string({ description: "The processor's price id of the plan `standard`." }),
        partnerTier: setting.string({ description: "The processor's price id of the plan `partner_tier`." }),
        institutional: setting.string({ description: "The processor's price id of the plan `institutional`." }),
      }),
    }),
    events: z.object({
      maxAgeDays: setting.int({
        min: 1,
        max: 3650,
        default: 90,
        description: "How old an event's timestamp may be for POST /v1/events to accept it, in days (at most 5 minutes ahead).",
      }),
    }),
    rateLimits: z.object({
      register: limit("Register", "Registrations per client address", { limit: 5, windowSeconds: 3600 }),
      loginPerEmail: limit("LoginPerEmail", "Logins per e-mail", { limit: 10, windowSeconds: 900 }),
      loginPerIp: limit("LoginPerIp", "Logins per client address", { limit: 30, windowSeconds: 900 }),
      forgotPassword: limit("ForgotPassword", "Password reset requests per e-mail", { limit: 3, windowSeconds: 3600 }),
      resetPassword: limit("ResetPassword", "Password resets per client address", { limit: 5, windowSeconds: 3600 }),
      partnerInvite: limit("PartnerInvite", "Partner invitations (each one a mail) per account", { limit: 20, windowSeconds: 3600 }),
      blocklistReport: limit("BlocklistReport", "Accepted blocklist reports per account", { limit: 30, windowSeconds: 3600 }),
    }),
    pki: z.object({
      caCertFile: setting.path({
        description:
          "The device CA's certificate (PEM), with Protection:Pki:CaKeyFile. Both unset: a P-256 CA is generated on first start and kept in PostgreSQL, shared by every instance.",
      }),
      caKeyFile: setting.path({
        description: "The device CA's private key (PEM: PKCS#8, or SEC1 for EC keys), with Protection:Pki:CaCertFile.",
      }),
      certificateValidityDays: setting.int({
        min: 1,
        max: 3650,
        default: 365,
        description: "Validity of the client certificates issued to devices, in days.",
      }),
      renewBeforeDays: setting.int({
        min: 0,
        max: 3650,
        default: 30,
        description: "A heartbeat this many days or fewer before the device certificate expires carries the renew_certificate command.",
      }),
    }),
    devices: z.object({
      heartbeatIntervalSeconds: setting.int({
        min: 1,
        max: 86_400,
        default: 300,
        description: "Interval between device heartbeats (`heartbeat_interval_secs`); 3 missed intervals turn a device offline.",
      }),
    }),
    enrollments: z.object({
      defaultUnenrollDelayHours: setting.int({
        min: 1,
        max: 8760,
        default: 48,
        description: "unenroll_delay_hours of a self-tier enrollment that names none.",
      }),
      minUnenrollDelayHours: setting.int({ min: 1, max: 8760, default: 24, description: "Smallest unenroll_delay_hours accepted." }),
      maxUnenrollDelayHours: setting.int({ min: 1, max: 8760, default: 72, description: "Largest unenroll_delay_hours accepted." }),
      unenrollDelayUnitSeconds: setting.int({
        min: 1,
        max: 3600,
        default: 3600,
        description: "Seconds in one hour of unenroll delay: 3600, lowered only for tests and demos.",
      }),
      tokenLifetimeHours: setting.int({ min: 1, max: 8760, default: 24, description: "Lifetime of an enrollment token, in hours." }),
    }),
    lockout: z.object({
      maxFailures: setting.int({
        min: 1,
        max: 1_000_000,
        default: 5,
        description: "Failed logins of one e-mail within Protection:Lockout:WindowSeconds that lock it.",
      }),
      windowSeconds: setting.int({
        min: 1,
        max: 86_400,
        default: 900,
        description: "Window in which failed logins are counted, in seconds.",
      }),
      durationSeconds: setting.int({
        min: 1,
        max: 86_400,
        default: 900,
        description: "How long a locked e-mail cannot log in (429), the right password included, in seconds.",
      }),
    }),
  }),
});

export type ProtectionSettings = z.output<typeof protectionSettings>;

/** The e-mails of a comma-separated setting, trimmed and lower-cased. */
export function emailList(value: string | undefined): Set<string> {
  return new Set(
    (value ?? "")
      .split(",")
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** Keys of earlier releases, still read, with a warning naming their new key. */
export const protectionRenamedSettings = { "Gateway:Protection:Port": "Fronts:Protection:Port" };
