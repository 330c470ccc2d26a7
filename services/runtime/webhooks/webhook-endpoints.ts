// Checks the configured webhook endpoints at start-up and resolves each into what delivery needs:
// a stable key, a URL safe to show, the signing key bytes and the event types it takes.
import { createHash } from "node:crypto";
import { decodeSecret } from "./signing.js";

/** One configured destination, as the module's settings give it. */
export interface WebhookEndpointSettings {
  url: string;
  secret?: string;
  /** Event types it takes; empty: all. */
  events: readonly string[];
}

/** A bad endpoint setting; its message names the setting and the item, never a secret. */
export class WebhookSettingsError extends Error {
  override name = "WebhookSettingsError";
}

export interface ResolveEndpointsOptions {
  endpoints: readonly WebhookEndpointSettings[];
  signingEnabled: boolean;
  /** The event types the module sends; an endpoint may list only these. */
  eventTypes: readonly string[];
  /** Where the settings live, for messages (`Webhooks` gives `Webhooks:Endpoints`). */
  settingsSection: string;
}

export interface WebhookEndpoint {
  /** Position in the endpoint list, for messages (never the secret). */
  index: number;
  /** Identifies the endpoint in the database: a digest of its URL, so reordering the list changes nothing. */
  key: string;
  url: URL;
  /** The URL as logs and answers show it: no user information, query values masked. */
  display: string;
  /** The decoded signing key; undefined when signing is off. */
  signingKey: Buffer | undefined;
  /** Empty: every type. */
  events: ReadonlySet<string>;
}

/** Throws a WebhookSettingsError naming the endpoint's index (never its secret) for the first bad endpoint. */
export function resolveWebhookEndpoints(options: ResolveEndpointsOptions): WebhookEndpoint[] {
  const setting = `${options.settingsSection}:Endpoints`;
  const known = new Set(options.eventTypes);
  const endpoints: WebhookEndpoint[] = [];
  const seen = new Map<string, number>();
  for (const [index, endpoint] of options.endpoints.entries()) {
    const invalid = (problem: string) => new WebhookSettingsError(`Invalid setting ${setting}: item ${index} ${problem}.`);
    let url: URL;
    try {
      url = new URL(endpoint.url);
    } catch {
      throw invalid("has a Url that is not an absolute URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw invalid(`has a ${url.protocol.replace(/:$/, "")} Url; only http and https are delivered to`);
    }
    let signingKey: Buffer | undefined;
    if (options.signingEnabled) {
      if (endpoint.secret === undefined || endpoint.secret.trim() === "") {
        throw invalid(
          `has no Secret while ${options.settingsSection}:SigningEnabled is true (set a whsec_ secret, or turn signing off explicitly)`,
        );
      }
      signingKey = decodeSecret(endpoint.secret);
      if (!signingKey) throw invalid("has a Secret that is not base64 after its whsec_ prefix");
    }
    const events = new Set<string>();
    for (const type of endpoint.events) {
      if (!known.has(type)) {
        throw invalid(`lists the unknown event type '${type.slice(0, 40)}' (known: ${options.eventTypes.join(", ")})`);
      }
      events.add(type);
    }
    const key = endpointKey(endpoint.url);
    const twin = seen.get(key);
    if (twin !== undefined) throw new WebhookSettingsError(`Invalid setting ${setting}: items ${twin} and ${index} have the same Url.`);
    seen.set(key, index);
    endpoints.push({ index, key, url, display: displayUrl(url), signingKey, events });
  }
  return endpoints;
}

export function endpointKey(url: string): string {
  return createHash("sha256").update(url, "utf8").digest("hex");
}

/** A URL without what could be a credential: user information dropped, every query value masked. */
export function displayUrl(url: URL): string {
  const shown = new URL(url.href);
  shown.username = "";
  shown.password = "";
  shown.hash = "";
  if (shown.search) {
    const masked = [...shown.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=***`);
    shown.search = `?${masked.join("&")}`;
  }
  return shown.href;
}

export function takesEvent(endpoint: WebhookEndpoint, type: string): boolean {
  return endpoint.events.size === 0 || endpoint.events.has(type);
}
