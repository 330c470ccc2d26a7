// The `assistant` kind: a hosted coding assistant reached through a token exchange. Chat at
// `{endpoints.api}/chat/completions` and probes at `{endpoints.api}/models` with the exchanged
// token as Bearer, Editor-Version and User-Agent; a 401 drops the token and retries exactly once.
import { createRequire } from "node:module";
import { type ChatCompletionsClient, createChatCompletionsClient } from "./chat-completions-client.js";
import { createProviderAgents } from "./http-request.js";
import { discoverOAuthToken, type OAuthTokenSources } from "./oauth-token-discovery.js";
import { TokenExchange } from "./token-exchange.js";

const version = (createRequire(import.meta.url)("../../../package.json") as { version: string }).version;

/** `Providers:<name>:EditorVersion` when unset: the editor the assistant's API expects to hear from. */
export const DEFAULT_EDITOR_VERSION = "vscode/1.99.3";
export const DEFAULT_USER_AGENT = `meshwork/${version}`;

export interface AssistantProviderOptions extends OAuthTokenSources {
  name: string;
  /** `Providers:<name>:TokenExchangeUrl`. */
  tokenExchangeUrl: string;
  /** `Providers:<name>:EditorVersion` (`<editor>/<version>`). */
  editorVersion?: string;
  /** `<client>/<version>`, default `meshwork/<package version>`. */
  userAgent?: string;
  retryBaseMs?: number;
  maxRetries?: number;
  /** `Providers:<name>:DangerouslyDisableSslValidation`: the exchange and API requests of this provider only. */
  disableTlsValidation?: boolean;
  now?: () => number;
}

export interface AssistantProvider extends ChatCompletionsClient {
  readonly tokens: TokenExchange;
}

export function createAssistantProvider(options: AssistantProviderOptions): AssistantProvider {
  const exchangeUrl = new URL(options.tokenExchangeUrl);
  if (exchangeUrl.protocol !== "http:" && exchangeUrl.protocol !== "https:")
    throw new TypeError(`provider ${options.name}: TokenExchangeUrl must be http(s)`);
  const headers = {
    "editor-version": options.editorVersion ?? DEFAULT_EDITOR_VERSION,
    "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
  };
  const agents = createProviderAgents({ rejectUnauthorized: !options.disableTlsValidation });
  const tokens = new TokenExchange({
    provider: options.name,
    url: options.tokenExchangeUrl,
    headers,
    agents,
    now: options.now,
    oauthToken: async () => (await discoverOAuthToken(options))?.token,
  });
  const client = createChatCompletionsClient({
    name: options.name,
    kind: "assistant",
    retryBaseMs: options.retryBaseMs,
    maxRetries: options.maxRetries,
    agents,
    async endpoint(signal) {
      const exchanged = await tokens.get(signal);
      return { baseUrl: exchanged.api, headers: { ...headers, authorization: `Bearer ${exchanged.token}` } };
    },
    renewCredentials(refused) {
      tokens.drop(refused.headers.authorization?.replace(/^Bearer /, ""));
    },
  });
  return { ...client, tokens };
}
