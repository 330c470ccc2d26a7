// Device protection's settings: where its front listens and a gateway reaches it, accounts and
// tokens, passwords, roles, rate limits and the login lockout. The README's table is generated
// from these.
import { z } from "zod";
import { setting } from "../runtime/config/index.js";

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
        default: "http://127.0.0.1:9090",
        description: "Where a gateway-only process reaches the device protection service (gRPC over HTTP/2).",
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
    rateLimits: z.object({
      register: limit("Register", "Registrations per client address", { limit: 5, windowSeconds: 3600 }),
      loginPerEmail: limit("LoginPerEmail", "Logins per e-mail", { limit: 10, windowSeconds: 900 }),
      loginPerIp: limit("LoginPerIp", "Logins per client address", { limit: 30, windowSeconds: 900 }),
      forgotPassword: limit("ForgotPassword", "Password reset requests per e-mail", { limit: 3, windowSeconds: 3600 }),
      resetPassword: limit("ResetPassword", "Password resets per client address", { limit: 5, windowSeconds: 3600 }),
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
