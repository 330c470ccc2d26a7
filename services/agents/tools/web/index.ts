// The web tools: web_fetch (through the SSRF guard; HTML answered as text, cut at maxLength with
// `[truncated at N of M characters]`) and web_search (the Brave Search API:
// `GET {Tools:WebSearch:BaseUrl}/res/v1/web/search?q&count` with X-Subscription-Token).
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { htmlToText } from "./html-text.js";
import { guardedGet, type HostResolver, type SsrfSettings } from "./ssrf.js";

/** A fetch or search gives up after this long unless the envelope's timeoutMs says otherwise. */
export const WEB_TIMEOUT_MS = 30_000;
/** Bytes of a page read at most (the rest is not downloaded). */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;
export const MAX_SEARCH_COUNT = 10;

export interface WebSettings {
  web: SsrfSettings;
  webSearch: { baseUrl: string; apiKey?: string };
}

const webSettings = (ctx: ToolContext) => ctx.settings as unknown as WebSettings;

/** The caller's signal, also aborted after the timeout. */
export function deadline(ctx: ToolContext, defaultMs = WEB_TIMEOUT_MS): AbortSignal {
  return AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.timeoutMs ?? defaultMs)]);
}

/** The resolver the SSRF guard uses: `services.hostResolver` when a test gives one. */
export function hostResolverOf(ctx: ToolContext): HostResolver | undefined {
  return ctx.services.hostResolver;
}

function charsetOf(contentType: string): string {
  const match = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType);
  return match ? match[1]!.toLowerCase() : "utf-8";
}

function decode(body: Buffer, contentType: string): string {
  try {
    return new TextDecoder(charsetOf(contentType)).decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

const TEXTUAL = /^(text\/|application\/(json|xml|xhtml\+xml|javascript|ld\+json|rss\+xml|atom\+xml)|[^;]*\+(json|xml))/i;

/** `text` cut at `max` characters with the note, or as is. */
export function truncated(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[truncated at ${max} of ${text.length} characters]`;
}

const webFetch: ToolSpec = {
  name: "web_fetch",
  description:
    "Fetch an http(s) URL and answer its text (HTML turned into plain text). Private and loopback addresses are refused unless configured.",
  tier: "A",
  parameters: {
    type: "object",
    properties: {
      url: { type: "string", description: "The http or https URL." },
      maxLength: { type: "integer", default: 5000, description: "Characters of text answered at most." },
    },
    required: ["url"],
  },
  async run(args, ctx) {
    const maxLength = typeof args.maxLength === "number" ? Math.trunc(args.maxLength) : 5000;
    if (maxLength < 1) throw new ToolError("maxLength must be at least 1");
    const page = await guardedGet(String(args.url), {
      settings: webSettings(ctx).web,
      signal: deadline(ctx),
      maxBytes: MAX_PAGE_BYTES,
      resolve: hostResolverOf(ctx),
    });
    if (page.status < 200 || page.status >= 300) {
      throw new ToolError(`${page.url} answered HTTP ${page.status}${page.statusText ? ` ${page.statusText}` : ""}`);
    }
    const type = page.contentType.split(";")[0]!.trim().toLowerCase();
    if (type !== "" && !TEXTUAL.test(type)) throw new ToolError(`${page.url} is ${type}, not text`);
    const raw = decode(page.body, page.contentType);
    const html = type === "text/html" || type === "application/xhtml+xml" || (type === "" && /^\s*<(!doctype html|html)/i.test(raw));
    return truncated(html ? htmlToText(raw) : raw, maxLength);
  },
};

interface BraveResult {
  title?: unknown;
  url?: unknown;
  description?: unknown;
}

const stripTags = (text: string) => htmlToText(text).replace(/\n/g, " ");

const webSearch: ToolSpec = {
  name: "web_search",
  description: "Search the web (Brave Search API) and answer [{ title, url, snippet }].",
  tier: "X",
  parameters: {
    type: "object",
    properties: {
      query: { type: "string", description: "What to search for." },
      count: { type: "integer", default: 5, description: `How many results (1–${MAX_SEARCH_COUNT}).` },
    },
    required: ["query"],
  },
  async run(args, ctx) {
    const { baseUrl, apiKey } = webSettings(ctx).webSearch;
    if (!apiKey) throw new ToolError("web_search needs a Brave Search API key: set Tools:WebSearch:ApiKey");
    const query = String(args.query).trim();
    if (query === "") throw new ToolError("query must not be empty");
    const asked = typeof args.count === "number" ? Math.trunc(args.count) : 5;
    const count = Math.min(MAX_SEARCH_COUNT, Math.max(1, asked));
    const url = new URL("/res/v1/web/search", baseUrl);
    url.searchParams.set("q", query);
    url.searchParams.set("count", String(count));
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: "application/json", "x-subscription-token": apiKey },
        signal: deadline(ctx),
      });
    } catch {
      throw new ToolError(`the Brave Search API at ${url.origin} cannot be reached`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      const hint = response.status === 401 || response.status === 403 ? " (check Tools:WebSearch:ApiKey)" : "";
      throw new ToolError(`the Brave Search API answered HTTP ${response.status}${hint}`);
    }
    let body: { web?: { results?: BraveResult[] } };
    try {
      body = (await response.json()) as typeof body;
    } catch {
      throw new ToolError("the Brave Search API answered something that is not JSON");
    }
    const results = Array.isArray(body?.web?.results) ? body.web.results : [];
    return results.slice(0, count).map((r) => ({
      title: typeof r.title === "string" ? stripTags(r.title) : "",
      url: typeof r.url === "string" ? r.url : "",
      snippet: typeof r.description === "string" ? stripTags(r.description) : "",
    }));
  },
};

export const webTools: ToolSpec[] = [webFetch, webSearch];
