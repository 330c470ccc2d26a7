// The Tailscale API v2 as the tailnet tools call it: an API key as a bearer token, or an OAuth
// client exchanged at `/api/v2/oauth/token` (client credentials) for an access token, kept until
// shortly before it expires. Errors never carry a credential.
import { type ToolContext, ToolError } from "../tool.js";
import { type MeshCredential, meshSettings } from "./config.js";

export const API_TIMEOUT_MS = 15_000;

/** Access tokens by API base URL and client id. */
const accessTokens = new Map<string, { token: string; expiresAt: number }>();

async function call(url: URL, init: RequestInit, ctx: ToolContext): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.timeoutMs ?? API_TIMEOUT_MS)]) });
  } catch {
    throw new ToolError(`the Tailscale API at ${url.origin} cannot be reached`);
  }
}

async function failure(response: Response, what: string): Promise<ToolError> {
  let message = "";
  try {
    const body = (await response.json()) as { message?: unknown };
    if (typeof body.message === "string") message = `: ${body.message.slice(0, 200)}`;
  } catch {
    // no JSON message
  }
  const hint = response.status === 401 || response.status === 403 ? " (check the tailnet credential)" : "";
  return new ToolError(`${what} answered HTTP ${response.status}${message}${hint}`);
}

async function bearer(credential: MeshCredential, ctx: ToolContext): Promise<string> {
  if (credential.method === "api-key") return credential.apiKey;
  const base = meshSettings(ctx).apiBaseUrl;
  const key = `${base} ${credential.clientId}`;
  const cached = accessTokens.get(key);
  if (cached && cached.expiresAt > Date.now()) return cached.token;
  const response = await call(
    new URL("/api/v2/oauth/token", base),
    {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({
        client_id: credential.clientId,
        client_secret: credential.clientSecret,
        grant_type: "client_credentials",
      }),
    },
    ctx,
  );
  if (!response.ok) throw await failure(response, "the Tailscale OAuth token endpoint");
  const body = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
  if (typeof body.access_token !== "string") throw new ToolError("the Tailscale OAuth token endpoint answered no access_token");
  const seconds = typeof body.expires_in === "number" ? body.expires_in : 3600;
  accessTokens.set(key, { token: body.access_token, expiresAt: Date.now() + Math.max(0, seconds - 60) * 1000 });
  return body.access_token;
}

export interface TailscaleDevice {
  name?: string;
  hostname?: string;
  addresses?: string[];
  os?: string;
  tags?: string[];
  connectedToControl?: boolean;
  lastSeen?: string;
}

/** GET /api/v2/tailnet/{tailnet}/devices?fields=all. */
export async function listDevices(credential: MeshCredential, tailnet: string, ctx: ToolContext): Promise<TailscaleDevice[]> {
  const url = new URL(`/api/v2/tailnet/${encodeURIComponent(tailnet)}/devices`, meshSettings(ctx).apiBaseUrl);
  url.searchParams.set("fields", "all");
  const token = await bearer(credential, ctx);
  const response = await call(url, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } }, ctx);
  if (!response.ok) throw await failure(response, "the Tailscale API");
  const body = (await response.json()) as { devices?: unknown };
  return Array.isArray(body.devices) ? (body.devices as TailscaleDevice[]) : [];
}

export interface Machine {
  name: string;
  addresses: string[];
  os: string;
  tags: string[];
  online: boolean;
}

export const machineOf = (device: TailscaleDevice): Machine => ({
  name: device.name ?? device.hostname ?? "",
  addresses: Array.isArray(device.addresses) ? device.addresses : [],
  os: device.os ?? "",
  tags: Array.isArray(device.tags) ? device.tags : [],
  online: device.connectedToControl === true,
});
