// The shapes the turn loop and the providers share: OpenAI chat-completions messages and tool
// definitions as sent, the assembled reply as received, and the client every provider kind offers.

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string };

/** A tool as chat completions takes it: a function with a JSON Schema for its arguments. */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** Aborting it aborts the HTTP request upstream (the socket is closed) and the call rejects with ProviderCancelledError. */
  signal?: AbortSignal;
}

/** One streamed piece of the reply as it arrives; `attempt` counts from 1 and grows when a failed attempt is retried. */
export interface ChatDelta {
  content: string;
  attempt: number;
}

export type DeltaListener = (delta: ChatDelta) => void;

/** Why an attempt is retried: told before the backoff so the caller can trace it (and drop deltas of the failed attempt). */
export interface RetryInfo {
  /** The attempt that failed, from 1. */
  attempt: number;
  reason: "unreachable" | "server_error" | "empty_reply" | "unauthorized";
  status?: number;
  delayMs: number;
}

export interface ChatResult {
  message: { role: "assistant"; content: string | null; tool_calls?: ToolCall[] };
  /** `stop`, `tool_calls`, `length`, `content_filter`, or null when the stream ended without one. */
  finishReason: string | null;
  /** Zero when the provider sent no usage chunk. */
  usage: Usage;
  /** The model the provider says answered (its chunks' `model`), else the one asked for. */
  model: string;
  /** How many HTTP attempts the reply took. */
  attempts: number;
}

export interface ChatOptions {
  onRetry?: (info: RetryInfo) => void;
}

export type ProviderKind = "openai" | "assistant";

/** What the turn loop and the pool use of a provider, whatever its kind. */
export interface ProviderClient {
  readonly name: string;
  readonly kind: ProviderKind;
  /** Streams one chat completion; deltas of content go to `onDelta` in order as they arrive. */
  chat(request: ChatRequest, onDelta?: DeltaListener, options?: ChatOptions): Promise<ChatResult>;
  /** `GET …/models`: the ids the provider lists. The probe of the pool. */
  models(signal?: AbortSignal): Promise<string[]>;
}
