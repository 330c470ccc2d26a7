// The agent front's settings (interface: Gateway:Server, Gateway:Auth, Gateway:RateLimit,
// Gateway:Cors) and the role ladder, apart from the policy that reads them (front-settings.ts), so
// loading the configuration does not load the auth and rate-limit machinery.
import { isIP } from "node:net";
import { z } from "zod";
import { setting, stringList } from "../runtime/config/index.js";

/** Roles by level, lowest first: contracts name them in (meshwork.api.v1.auth) role. */
export const agentRoles = ["user", "operator", "admin"] as const;
export type AgentRole = (typeof agentRoles)[number];

function addressOrCidr(item: string): string | undefined {
  const [address, bits, extra] = item.split("/");
  const family = isIP(address ?? "");
  if (family === 0 || extra !== undefined) return `"${item}" is not an IP address or CIDR`;
  if (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128))) {
    return `"${item}" has a bad prefix length`;
  }
  return undefined;
}

const httpMethod = (item: string) => (/^[A-Za-z]+$|^\*$/.test(item) ? undefined : `"${item}" is not an HTTP method`);

/** The sections of `Gateway:*` this file owns; the module's schema puts them under `gateway`. */
export const gatewayFrontSettings = {
  server: z.object({
    host: setting.string({
      description: "Bind address of the agent front (REST, hubs, health). Unset: like the other fronts (Fronts:Host, loopback by default).",
    }),
    port: setting.port({ default: 18789, description: "Port of the agent gateway's REST front, hubs and health probes." }),
    trustedProxies: stringList({
      expected: "IP addresses or CIDRs",
      check: addressOrCidr,
      description:
        "Proxies (CIDRs) whose X-Forwarded-For names the client, with Gateway:Server:ForwardedHeaders; the client address keys the rate limit of callers without a key.",
    }),
    forwardedHeaders: setting.bool({
      default: false,
      description: "Honour X-Forwarded-For from Gateway:Server:TrustedProxies (never from anyone else).",
    }),
    verbose: setting.bool({
      default: false,
      description: "A log line per request on the agent front: method, path, status, ms, key name, client IP (never a key).",
    }),
  }),
  auth: z.object({
    enabled: setting.bool({
      default: false,
      description: "Require an API key (X-API-Key; gRPC x-api-key) of Gateway:Auth:ApiKeys on every /api path and hub. Health needs none.",
    }),
    apiKeys: setting.list({
      fields: [
        { name: "Key", required: true, secret: true },
        { name: "Name", required: true },
        { name: "Role", required: true, values: agentRoles },
      ],
      map: (item) => ({ key: item.Key!, name: item.Name!, role: item.Role! as AgentRole }),
      secret: true,
      description:
        "The agent gateway's API keys, `[{ Key, Name, Role }]`, Role User, Operator or Admin (levels). A key has at least 16 characters, not one repeated, no placeholder text. Name is the audit's userId.",
    }),
    allowAnonymousPublicBind: setting.bool({
      default: false,
      description:
        "Let the agent front listen beyond loopback with Gateway:Auth:Enabled false (anyone who reaches it may call everything).",
    }),
  }),
  rateLimit: z.object({
    enabled: setting.bool({
      default: true,
      reloadable: true,
      description: "Sliding 60 s window per key Name (else client IP), shared by every instance through the database. Health is exempt.",
    }),
    maxRequestsPerMinute: setting.int({
      min: 1,
      max: 1_000_000,
      default: 120,
      reloadable: true,
      description: "Requests a key (or client IP) may make in any 60 s; more answer 429 with Retry-After.",
    }),
  }),
  cors: z.object({
    allowedOrigins: stringList({
      expected: "origins (https://host[:port]) or *",
      description: "Origins allowed to call the agent front from a browser. Unset: every origin (`*` unless AllowCredentials).",
    }),
    allowedMethods: stringList({
      expected: "HTTP methods",
      check: httpMethod,
      description: "Methods a CORS preflight may ask for. Unset: any.",
    }),
    allowCredentials: setting.bool({
      default: false,
      description: "Answer `Access-Control-Allow-Credentials: true` (the origin is then echoed, never `*`).",
    }),
  }),
};

const frontSchema = z.object({ gateway: z.object(gatewayFrontSettings) });
/** The part of the agents module's settings this file reads. */
export type FrontSettings = z.output<typeof frontSchema>;

const PLACEHOLDERS = ["changeme", "your-api-key", "placeholder", "example"];

/** What is wrong with a key, or undefined when it may be used (the key itself is never named). */
export function weakKeyProblem(key: string): string | undefined {
  if (key.length < 16) return "it is shorter than 16 characters";
  if (/^(.)\1*$/su.test(key)) return "it is one character repeated";
  const lower = key.toLowerCase();
  const placeholder = PLACEHOLDERS.find((p) => lower.includes(p));
  if (placeholder) return `it contains the placeholder text "${placeholder}"`;
  return undefined;
}
