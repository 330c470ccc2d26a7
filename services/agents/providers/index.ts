// Model providers of the agent gateway as a library: the OpenAI chat-completions client (`openai`
// kind), the hosted coding assistant behind a token exchange (`assistant` kind), and the pool that
// orders them by priority, falls back and probes. The turn loop and GET /api/providers use this.
export {
  type AssistantProvider,
  type AssistantProviderOptions,
  createAssistantProvider,
  DEFAULT_EDITOR_VERSION,
  DEFAULT_USER_AGENT,
} from "./assistant-provider.js";
export type { ChatCompletionsClient, ProviderEndpoint } from "./chat-completions-client.js";
export { AllProvidersFailedError, ProviderCancelledError, ProviderError, type ProviderFailure } from "./errors.js";
export {
  assistantConfigDir,
  type DiscoveredOAuthToken,
  discoverOAuthToken,
  type OAuthTokenSource,
  type OAuthTokenSources,
  tokenInFile,
} from "./oauth-token-discovery.js";
export { createOpenAiProvider, type OpenAiProviderOptions } from "./openai-provider.js";
export { ReplyAssembler } from "./reply-assembler.js";
export { type ExchangedToken, REFRESH_MARGIN_MS, TokenExchange, type TokenExchangeOptions } from "./token-exchange.js";
export { type ServerSentEvent, SseParser } from "./sse-parser.js";
export type {
  ChatDelta,
  ChatMessage,
  ChatOptions,
  ChatRequest,
  ChatResult,
  DeltaListener,
  ProviderClient,
  ProviderKind,
  RetryInfo,
  ToolCall,
  ToolDefinition,
  Usage,
} from "./types.js";
export {
  type PoolChatOptions,
  type PoolChatRequest,
  type PoolChatResult,
  type PoolDelta,
  type PooledProvider,
  ProviderPool,
  type ProviderPoolOptions,
  type ProviderStatus,
} from "./provider-pool.js";
