// ToolServices.chat: a child conversation on the agent's provider and model (its defaults without
// an agent) for subagents and image questions. When `tools` are offered, tool calls run through
// the dispatcher (source agent, the parent agent's policy; no session, so C and X tools would ask
// and, with no one to ask, are refused) for at most CHILD_ROUNDS rounds; answers the final text.
import type { EntityManager } from "@mikro-orm/postgresql";
import { AgentEntity } from "../agents/entities.js";
import type { ChatMessage, ProviderPool } from "../providers/index.js";
import type { ToolChatRequest, ToolDispatcher } from "./tool.js";

const CHILD_ROUNDS = 8;

export function toolChat(deps: { em: () => EntityManager; pool: ProviderPool; dispatcher: () => ToolDispatcher }) {
  return async (agentId: string | undefined, request: ToolChatRequest): Promise<string> => {
    const agent = agentId ? await deps.em().findOne(AgentEntity, { id: agentId }) : null;
    const choice = agent ? { provider: agent.provider, model: agent.model } : deps.pool.defaultChoice();
    if (!choice) throw new Error("no provider is configured (Providers:<name>:*)");
    const offered = new Set(request.tools ?? []);
    const dispatcher = deps.dispatcher();
    const definitions = offered.size
      ? (await dispatcher.definitions(agentId)).filter((d) => {
          const tool = dispatcher.resolve(d.function.name);
          return tool !== undefined && offered.has(tool.name);
        })
      : undefined;
    const messages = [...request.messages] as ChatMessage[];
    for (let round = 0; ; round++) {
      const result = await deps.pool.chat({
        ...choice,
        messages,
        tools: definitions?.length ? definitions : undefined,
        signal: request.signal,
      });
      const calls = result.message.tool_calls ?? [];
      if (calls.length === 0 || round >= CHILD_ROUNDS) return result.message.content ?? "";
      messages.push({ role: "assistant", content: result.message.content, tool_calls: calls });
      for (const call of calls) {
        const tool = dispatcher.resolve(call.function.name);
        const output =
          tool && offered.has(tool.name)
            ? (
                await dispatcher.invoke({
                  name: call.function.name,
                  arguments: call.function.arguments,
                  source: "agent",
                  agentId,
                  provider: result.provider,
                  signal: request.signal,
                })
              ).output
            : `Error: unknown tool '${call.function.name}'`;
        messages.push({ role: "tool", content: output, tool_call_id: call.id });
      }
    }
  };
}
