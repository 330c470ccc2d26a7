// Builds the assistant message out of chat.completion.chunk objects: content in order, tool calls
// from fragments keyed by their index (the id, type and name come once, the arguments in pieces,
// several calls interleaved), the finish reason and the usage chunk `include_usage` adds last.
import type { ChatResult, ToolCall, Usage } from "./types.js";

export class ReplyAssembler {
  #content = "";
  #sawContent = false;
  readonly #calls = new Map<number, ToolCall>();
  finishReason: string | null = null;
  usage: Usage | undefined;
  model: string | undefined;

  /** Takes one parsed chunk; answers the content delta it carries ("" when none). */
  take(chunk: unknown): string {
    if (!isObject(chunk)) return "";
    if (typeof chunk.model === "string" && chunk.model !== "") this.model = chunk.model;
    if (isObject(chunk.usage)) this.usage = readUsage(chunk.usage);
    // Choice 0 only: we never ask for n > 1.
    const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => isObject(c) && (c.index ?? 0) === 0) : undefined;
    if (!isObject(choice)) return "";
    if (typeof choice.finish_reason === "string") this.finishReason = choice.finish_reason;
    const delta = isObject(choice.delta) ? choice.delta : isObject(choice.message) ? choice.message : undefined;
    if (!delta) return "";
    if (Array.isArray(delta.tool_calls)) {
      for (const [position, fragment] of delta.tool_calls.entries()) if (isObject(fragment)) this.#fragment(fragment, position);
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.#content += delta.content;
      this.#sawContent = true;
      return delta.content;
    }
    return "";
  }

  #fragment(fragment: Record<string, unknown>, position: number): void {
    const index = typeof fragment.index === "number" ? fragment.index : position;
    let call = this.#calls.get(index);
    if (!call) {
      call = { id: "", type: "function", function: { name: "", arguments: "" } };
      this.#calls.set(index, call);
    }
    if (typeof fragment.id === "string" && fragment.id !== "") call.id = fragment.id;
    const fn = isObject(fragment.function) ? fragment.function : undefined;
    if (typeof fn?.name === "string") call.function.name += fn.name;
    if (typeof fn?.arguments === "string") call.function.arguments += fn.arguments;
  }

  /** Neither content nor a tool call came. */
  get empty(): boolean {
    return !this.#sawContent && this.#calls.size === 0;
  }

  result(requestedModel: string, attempts: number): ChatResult {
    const toolCalls = [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    return {
      message: {
        role: "assistant",
        content: this.#sawContent ? this.#content : null,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      },
      finishReason: this.finishReason,
      usage: this.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      model: this.model ?? requestedModel,
      attempts,
    };
  }
}

function readUsage(usage: Record<string, unknown>): Usage {
  const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  const promptTokens = count(usage.prompt_tokens);
  const completionTokens = count(usage.completion_tokens);
  return { promptTokens, completionTokens, totalTokens: count(usage.total_tokens) || promptTokens + completionTokens };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
