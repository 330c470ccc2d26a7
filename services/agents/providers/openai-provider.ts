// The `openai` kind: any server speaking OpenAI's chat completions at `{BaseUrl}/chat/completions`
// with `Authorization: Bearer <key>`, probed with `GET {BaseUrl}/models`.
import { type ChatCompletionsClient, createChatCompletionsClient } from "./chat-completions-client.js";

export interface OpenAiProviderOptions {
  name: string;
  /** `Providers:<name>:BaseUrl`, ending `/v1`. */
  baseUrl: string;
  /** The key (`--api-key`, `ApiKey`, `<NAME>_API_KEY`, credential `provider.<name>`), resolved by the caller; read per attempt. No key, no Authorization header (local servers). */
  apiKey?: string | (() => string | undefined | Promise<string | undefined>);
  retryBaseMs?: number;
  maxRetries?: number;
  disableTlsValidation?: boolean;
}

export function createOpenAiProvider(options: OpenAiProviderOptions): ChatCompletionsClient {
  const base = new URL(options.baseUrl);
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new TypeError(`provider ${options.name}: BaseUrl must be http(s)`);
  return createChatCompletionsClient({
    name: options.name,
    kind: "openai",
    retryBaseMs: options.retryBaseMs,
    maxRetries: options.maxRetries,
    disableTlsValidation: options.disableTlsValidation,
    async endpoint() {
      const key = typeof options.apiKey === "function" ? await options.apiKey() : options.apiKey;
      const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
      return { baseUrl: options.baseUrl, headers };
    },
  });
}
