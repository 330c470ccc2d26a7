// agents.v1.AgentService and ProviderService handlers: thin, over Agents (agents.ts) and runTurn (turns.ts).
import { HUB_CONNECTION_ID_HEADER, hubClientOf } from "../../runtime/hubs/index.js";
import type { HubConnectionTokens } from "../../runtime/hubs/index.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AgentService, ChatEvent } from "../../../gen/agents/v1/agent_pb.js";
import type { ProviderService } from "../../../gen/agents/v1/provider_pb.js";
import type { Agents } from "./agents.js";
import type { AgentRow } from "./entities.js";
import { checkId } from "./errors.js";
import { runTurn, type TurnResult, type TurnSettings } from "./turns.js";

export function toAgent(row: AgentRow) {
  return {
    id: row.id,
    provider: row.provider,
    model: row.model,
    turnCount: row.turnCount,
    createdAt: timestampFromDate(row.createdAt),
    state: row.state === "idle" ? "Idle" : "Active",
    lastActivityAt: timestampFromDate(row.lastActivityAt),
    sessionId: row.sessionId,
  };
}

/**
 * Holds new turns while app-daemon drains this process for an update (503 with Retry-After) and
 * counts the turns in flight, so the drain knows when they have finished.
 */
export class TurnGate {
  draining = false;
  private running = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly retryAfterSeconds: number) {}

  /** Admits a turn (throws Unavailable while draining); answers its release. */
  enter(): () => void {
    if (this.draining) {
      throw new ConnectError("the agent gateway is draining for an update; try again shortly", Code.Unavailable, {
        "retry-after": String(this.retryAfterSeconds),
      });
    }
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.running === 0) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  get inFlight(): number {
    return this.running;
  }

  idle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** AgentService but the web channel's hub methods, which the chat channels implement (channels/web-hub.ts). */
export function agentService(
  agents: Agents,
  turnSettings: TurnSettings,
  hubTokens: HubConnectionTokens,
  gate?: TurnGate,
  /** Workers:Enabled: SendMessage's turn runs on the worker pool (work/turn-queue.ts). */
  queued?: (agentId: string, message: string, signal: AbortSignal) => Promise<TurnResult>,
): Omit<ServiceImpl<typeof AgentService>, "sendWebChannelMessage" | "pushAgentHubCalls"> {
  return {
    connectAgentHub: (req) => hubTokens.connect(req),

    async listAgents() {
      return { agents: (await agents.list()).map(toAgent) };
    },

    async spawnAgent(req, ctx) {
      const agent = await agents.spawn({ provider: req.provider, model: req.model, systemPrompt: req.systemPrompt });
      ctx.responseHeader.set("location", `/api/agents/${agent.id}`);
      return toAgent(agent);
    },

    async getAgent(req) {
      return toAgent(await agents.get(checkId("id", req.id, "agent")));
    },

    async stopAgent(req) {
      await agents.stop(checkId("id", req.id, "agent"), "requested");
      return {};
    },

    async sendMessage(req, ctx) {
      const release = gate?.enter();
      try {
        const id = checkId("id", req.id, "agent");
        const result = queued ? await queued(id, req.message, ctx.signal) : await runTurn(agents.deps, turnSettings, id, req.message);
        return { ...result, usage: result.usage };
      } finally {
        release?.();
      }
    },

    async *streamChat(req, ctx) {
      const release = gate?.enter();
      const item = (type: string, content: string): ChatEvent => ({ type, agentId: req.agentId, content }) as ChatEvent;
      // Deltas arrive from the provider stream; the generator hands them out as the client pulls.
      const queue: ChatEvent[] = [];
      let wake: (() => void) | undefined;
      let done = false;
      let failure: string | undefined;
      let reply = "";
      const push = (event: ChatEvent) => {
        queue.push(event);
        wake?.();
      };
      const turn = (async () => {
        try {
          const id = checkId("agent_id", req.agentId, "agent");
          // On /hubs/agent, C and X tools ask the client: ConfirmTool(...) answers "approve" or "deny";
          // ask_questions too: AskQuestions(...) answers { answers } or { cancelled: true }. The
          // signal given aborts at Tools:Approval:TimeoutSeconds and when the stream ends.
          const client = hubClientOf(ctx.requestHeader.get(HUB_CONNECTION_ID_HEADER));
          const result = await runTurn(agents.deps, turnSettings, id, req.message, {
            signal: ctx.signal,
            onDelta: (content) => push(item("content", content)),
            ...(client
              ? {
                  confirm: async (question, signal) => (await client("ConfirmTool", [question], signal)) === "approve",
                  askQuestions: (request, signal) => client("AskQuestions", [request], signal),
                }
              : {}),
          });
          reply = result.response;
        } catch (error) {
          failure = error instanceof ConnectError ? error.rawMessage : "the turn failed";
          if (!(error instanceof ConnectError) || error.code === Code.Internal || error.code === Code.Unknown) {
            agents.deps.logger.error(
              { agentId: req.agentId, error: error instanceof Error ? error.message : String(error) },
              "streamed turn failed",
            );
          }
        } finally {
          release?.();
          done = true;
          wake?.();
        }
      })();
      yield item("start", "");
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (done) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      await turn;
      if (ctx.signal.aborted) return;
      yield failure === undefined ? item("end", reply) : item("error", failure);
    },
  };
}

export function providerService(agents: Agents): ServiceImpl<typeof ProviderService> {
  return {
    async listProviders() {
      return { providers: agents.deps.pool.list() };
    },
  };
}
