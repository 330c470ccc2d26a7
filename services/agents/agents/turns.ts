// One turn of an agent: claim the agent (a marker in agents_agent, so a second turn on any
// instance gets 409) and read its history in one prepared statement, send system prompt + history +
// message + tool definitions (stream: true) through the provider pool, run the tool-call loop (at
// most MaxToolRounds rounds, each result a `tool` message with its tool_call_id), then record the
// turn, its tool calls and AgentTurnCompleted in one statement of one transaction. Over TurnTimeout the provider request is aborted (504); every provider failed
// is 503 with Retry-After.
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { context, type Span, trace } from "@opentelemetry/api";
import { AgentTurnCompletedSchema } from "../../../gen/agents/v1/events_pb.js";
import type { AuditEntry } from "../audit/types.js";
import { AllProvidersFailedError, type ChatMessage, ProviderCancelledError, type Usage } from "../providers/index.js";
import type { OutboxInsert } from "../../runtime/outbox/index.js";
import type { ToolCallRow, TurnRow } from "../sessions/entities.js";
import { runSlashCommand } from "../tools/slash-commands.js";
import type { QuestionsAsker, QuestionsRequest } from "../tools/core/ask-questions.js";
import type { ConfirmQuestion } from "../tools/tool.js";
import { type AgentsDeps, audit, checkMessageGiven, notFound, STALE_TURN_MARGIN_MS, userId } from "./agents.js";
import type { AgentRow } from "./entities.js";
import { refusal } from "./errors.js";
import { endSpan } from "./turn-telemetry.js";

export interface TurnOptions {
  /** Each non-empty content delta as it arrives. */
  onDelta?: (content: string) => void;
  /** The caller gave up (a cancelled StreamChat): the provider request is aborted. */
  signal?: AbortSignal;
  /**
   * Asks the caller to confirm a C or X tool (the /hubs/agent client's ConfirmTool); unset, the call
   * waits as a pending approval (GET /api/agents/{id}/approvals). `signal` aborts when the answer is
   * no longer wanted (Tools:Approval:TimeoutSeconds passed, the turn ended).
   */
  confirm?: (question: ConfirmQuestion & { approvalId: string; agentId: string }, signal: AbortSignal) => Promise<boolean>;
  /**
   * Puts ask_questions' request to the caller (the /hubs/agent client's AskQuestions) and resolves
   * with its raw result (ask_questions reads it); unset, the questions wait as a pending item.
   * Bounded like `confirm`.
   */
  askQuestions?: (request: QuestionsRequest & { approvalId: string; agentId: string }, signal: AbortSignal) => Promise<unknown>;
}

export interface TurnResult {
  response: string;
  turnIndex: number;
  provider: string;
  model: string;
  usage: Usage;
}

export interface TurnSettings {
  turnTimeout: number;
  maxToolRounds: number;
  providerProbeSeconds: number;
}

const formatSpan = (ms: number) => {
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
};

export async function runTurn(
  deps: AgentsDeps,
  settings: TurnSettings,
  agentId: string,
  message: string,
  options: TurnOptions = {},
): Promise<TurnResult> {
  checkMessageGiven(message);
  const command = await runSlashCommand(deps, agentId, message);
  if (command) return command;
  const user = userId();
  const turnId = randomUUID();
  const startedAt = new Date();
  const { agent, history } = await claim(deps, settings, agentId, turnId, startedAt);
  const released = { done: false };
  const auditEntries: AuditEntry[] = [];
  const ins = deps.instruments;
  const turnSpan = ins.agent.startSpan("app.agent.turn", {
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.system": agent.provider,
      "gen_ai.provider.name": agent.provider,
      "gen_ai.request.model": agent.model,
      "app.turn.index": agent.turnCount,
      "app.agent.turn_count": agent.turnCount,
      "app.agent.id": agent.id,
    },
  });
  const inTurn = trace.setSpan(context.active(), turnSpan);
  let turnOutcome: "ok" | "cancelled" | { error: string } = { error: "the turn failed" };
  try {
    const messages: ChatMessage[] = [];
    if (agent.systemPrompt) messages.push({ role: "system", content: agent.systemPrompt });
    for (const turn of history) messages.push({ role: "user", content: turn.message }, { role: "assistant", content: turn.response });
    messages.push({ role: "user", content: message });

    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error("turn timeout")), settings.turnTimeout);
    const signal = options.signal ? AbortSignal.any([timeout.signal, options.signal]) : timeout.signal;
    const usage: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    const toolCalls: Omit<ToolCallRow, "id" | "turnId">[] = [];
    // ask_questions of this turn asks the caller's client when it has one (bounded like ConfirmTool).
    const askClient = options.askQuestions;
    const askQuestions: QuestionsAsker | undefined =
      askClient &&
      ((request, toolSignal) =>
        deps.tools.approvals.askClient(agent.id, request, askClient, { unanswered: null, signal: AbortSignal.any([signal, toolSignal]) }));
    let response = "";
    let provider = agent.provider;
    let model = agent.model;
    try {
      for (let round = 0; ; round++) {
        const tools = await deps.tools.dispatcher.definitions(agent.id, agent.sessionId);
        const result = await providerCall(deps, inTurn, agent, (span) =>
          deps.pool.chat(
            { provider: agent.provider, model: agent.model, messages, tools, signal },
            options.onDelta && ((delta) => delta.content !== "" && options.onDelta?.(delta.content)),
            {
              onRetry: (name, info) =>
                span.addEvent("retry", {
                  "gen_ai.provider.name": name,
                  "app.provider.attempt": info.attempt,
                  "app.provider.retry_reason": info.reason,
                  "app.provider.retry_delay_ms": info.delayMs,
                }),
            },
          ),
        );
        usage.promptTokens += result.usage.promptTokens;
        usage.completionTokens += result.usage.completionTokens;
        usage.totalTokens += result.usage.totalTokens;
        provider = result.provider;
        model = result.model;
        const calls = result.message.tool_calls ?? [];
        if (calls.length === 0 || round >= settings.maxToolRounds) {
          response = result.message.content ?? "";
          break;
        }
        messages.push({ role: "assistant", content: result.message.content, tool_calls: calls });
        for (const call of calls) {
          const toolSpan = ins.tools.startSpan(
            "app.tool.invoke",
            { attributes: { "gen_ai.tool.name": call.function.name, "gen_ai.tool.call.id": call.id, "gen_ai.system": provider } },
            inTurn,
          );
          const ran = await deps.tools.dispatcher.invoke({
            name: call.function.name,
            arguments: call.function.arguments,
            source: "agent",
            agentId: agent.id,
            sessionId: agent.sessionId,
            provider,
            signal,
            confirm: (question) => confirmTool(deps, agent, question, options, signal),
            audit: (entry) => auditEntries.push({ ...entry, ...(user ? { userId: user } : {}) }),
            ...(askQuestions ? { askQuestions } : {}),
          });
          toolSpan.setAttributes({ "gen_ai.tool.name": ran.canonical, "app.tool.outcome": ran.outcome });
          endSpan(toolSpan, ran.isError ? "cancelled" : "ok");
          messages.push({ role: "tool", content: ran.output, tool_call_id: call.id });
          toolCalls.push({
            position: toolCalls.length,
            callId: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
            result: ran.output,
            outcome: ran.outcome,
          });
        }
      }
    } catch (error) {
      if (error instanceof ProviderCancelledError || signal.aborted) {
        turnOutcome = "cancelled";
        if (timeout.signal.aborted) {
          throw refusal(
            Code.DeadlineExceeded,
            `the turn took longer than Gateway:Agents:TurnTimeout (${formatSpan(settings.turnTimeout)}); the provider request was aborted`,
          );
        }
        throw refusal(Code.Canceled, "the turn was cancelled");
      }
      if (error instanceof AllProvidersFailedError) {
        turnOutcome = { error: "every provider failed" };
        throw refusal(Code.Unavailable, error.message, { "retry-after": String(settings.providerProbeSeconds) });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }

    const durationMs = Date.now() - startedAt.getTime();
    const turnIndex = agent.turnCount;
    const turn: TurnRow = {
      id: randomUUID(),
      sessionId: agent.sessionId,
      index: turnIndex,
      message,
      response,
      provider,
      model,
      startedAt,
      durationMs,
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
    };
    const event = {
      schema: AgentTurnCompletedSchema,
      message: {
        agentId: agent.id,
        turnIndex,
        durationMs: BigInt(durationMs),
        promptTokens: BigInt(usage.promptTokens),
        completionTokens: BigInt(usage.completionTokens),
      },
    };
    const calls = toolCalls.map((call) => ({ id: randomUUID(), turnId: turn.id, ...call }));
    if (auditEntries.length === 0) {
      // The whole record is one statement on its own: no begin and commit round trips.
      await deps.uow.statement((tx) => recordStatement(agent.id, turn, calls, turnId, tx.outboxInserts([event])));
    } else {
      // Tool calls were audited: the entries go in the same transaction as the turn.
      await deps.uow.run(async (tx) => {
        const { sql, bindings } = recordStatement(agent.id, turn, calls, turnId, tx.outboxInserts([event]));
        await tx.em.execute(sql, bindings);
        for (const entry of auditEntries.splice(0)) await audit(deps, tx, entry);
      });
    }
    released.done = true;

    const system = { "gen_ai.system": provider };
    ins.turns.add(1, system);
    ins.turnDuration.record(durationMs, system);
    ins.tokens.add(usage.totalTokens, system);
    turnSpan.setAttributes({
      "gen_ai.response.model": model,
      "gen_ai.usage.input_tokens": usage.promptTokens,
      "gen_ai.usage.output_tokens": usage.completionTokens,
    });
    turnOutcome = "ok";
    return { response, turnIndex, provider, model, usage };
  } catch (error) {
    // An unexpected failure (not a provider's, not a cancellation) counts as a provider error, as
    // the documented span status rule has it: Error always comes with an app.providers.errors increment.
    if (typeof turnOutcome === "object" && turnOutcome.error === "the turn failed")
      ins.providerErrors.add(1, { "gen_ai.system": agent.provider });
    throw error;
  } finally {
    endSpan(turnSpan, turnOutcome);
    if (!released.done) await release(deps, agent.id, turnId, auditEntries);
  }
}

/** A C or X tool of a turn: the caller's ConfirmTool when it has one, else a pending approval (approve → run). */
async function confirmTool(
  deps: AgentsDeps,
  agent: AgentRow,
  question: ConfirmQuestion,
  options: TurnOptions,
  signal: AbortSignal,
): Promise<boolean> {
  const { approvals } = deps.tools;
  if (options.confirm) return approvals.askClient(agent.id, question, options.confirm, { signal });
  const answer = await approvals.ask({ agentId: agent.id, sessionId: agent.sessionId, kind: "tool", ...question }, signal);
  return answer.decision === "approve";
}

/**
 * Marks the turn as running on the agent and reads what the turn needs, the agent and its
 * session's earlier turns, in one prepared statement; 404 when there is no such agent, 409 when a
 * turn is under way (on any instance: the marker is in the shared row).
 */
async function claim(
  deps: AgentsDeps,
  settings: TurnSettings,
  agentId: string,
  turnId: string,
  now: Date,
): Promise<{ agent: AgentRow; history: { message: string; response: string }[] }> {
  const staleCutoff = new Date(now.getTime() - settings.turnTimeout - STALE_TURN_MARGIN_MS);
  const [row] = await deps.db.reads.statement<ClaimRow>("agents_turn_claim", CLAIM, [turnId, now, agentId, staleCutoff]);
  if (!row) {
    const [exists] = await deps.db.reads.statement<{ id: string }>(
      "agents_agent_exists",
      `select "id" from "agents_agent" where "id" = $1`,
      [agentId],
    );
    if (!exists) throw notFound(agentId);
    throw refusal(Code.Aborted, `agent ${agentId} is already running a turn; send the next message when it ends`);
  }
  const agent: AgentRow = {
    id: row.id,
    sessionId: row.session_id,
    provider: row.provider,
    model: row.model,
    systemPrompt: row.system_prompt,
    state: "active",
    turnCount: Number(row.turn_count),
    createdAt: new Date(row.created_at),
    lastActivityAt: now,
    runningTurn: turnId,
    runningSince: now,
  };
  return { agent, history: row.history };
}

interface ClaimRow {
  id: string;
  session_id: string;
  provider: string;
  model: string;
  system_prompt: string | null;
  turn_count: number;
  created_at: string;
  history: { message: string; response: string }[];
}

const CLAIM = `with claimed as (
    update "agents_agent" set "running_turn" = $1, "running_since" = $2, "state" = 'active', "last_activity_at" = $2
     where "id" = $3 and ("running_turn" is null or "running_since" < $4)
    returning "id", "session_id", "provider", "model", "system_prompt", "turn_count", "created_at")
  select c.*, (select coalesce(json_agg(json_build_object('message', t."message", 'response', t."response") order by t."index"), '[]')
                 from "agents_turn" t where t."session_id" = c."session_id") as "history"
    from claimed c`;

/**
 * The turn recorded in one statement (run in the unit of work's transaction): its row, its tool
 * calls, the session's and the agent's counts (the agent released), and AgentTurnCompleted into
 * the outbox. Audit entries of its tool calls follow in the same transaction.
 */
function recordStatement(
  agentId: string,
  turn: TurnRow,
  calls: ToolCallRow[],
  turnId: string,
  outbox: OutboxInsert[],
): { sql: string; bindings: unknown[] } {
  const parts = [
    {
      sql: `insert into "agents_turn" ("id", "session_id", "index", "message", "response", "provider", "model", "started_at",
              "duration_ms", "prompt_tokens", "completion_tokens") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      bindings: [
        turn.id,
        turn.sessionId,
        turn.index,
        turn.message,
        turn.response,
        turn.provider,
        turn.model,
        turn.startedAt,
        turn.durationMs,
        turn.promptTokens,
        turn.completionTokens,
      ],
    },
    {
      sql: `update "agents_session" set "turn_count" = ? where "id" = ?`,
      bindings: [turn.index + 1, turn.sessionId],
    },
    {
      sql: `update "agents_agent" set "turn_count" = "turn_count" + 1, "last_activity_at" = ?, "state" = 'active',
              "running_turn" = null, "running_since" = null where "id" = ? and "running_turn" = ?`,
      bindings: [new Date(), agentId, turnId],
    },
    // get_usage's counters (agents_tool_usage; tools/state/usage.ts reads and resets them).
    {
      sql: `insert into "agents_tool_usage" ("agent_id", "prompt_tokens", "completion_tokens", "tool_calls", "turns") values (?, ?, ?, ?, 1)
            on conflict ("agent_id") do update set
              "prompt_tokens" = "agents_tool_usage"."prompt_tokens" + excluded."prompt_tokens",
              "completion_tokens" = "agents_tool_usage"."completion_tokens" + excluded."completion_tokens",
              "tool_calls" = "agents_tool_usage"."tool_calls" + excluded."tool_calls",
              "turns" = "agents_tool_usage"."turns" + 1`,
      bindings: [agentId, turn.promptTokens, turn.completionTokens, calls.length],
    },
    ...outbox,
  ];
  if (calls.length > 0) {
    // The turn's row is inserted by a sibling part of the statement: the calls select from it, so
    // their foreign key is checked after it exists.
    parts.push({
      sql: `insert into "agents_tool_call" ("id", "turn_id", "position", "call_id", "name", "arguments", "result", "outcome")
            select c."id"::uuid, w0."id", c."position", c."call_id", c."name", c."arguments", c."result", c."outcome"
              from w0, json_to_recordset(?::json) as c("id" text, "position" int, "call_id" text, "name" text, "arguments" text, "result" text, "outcome" text)`,
      bindings: [
        JSON.stringify(
          calls.map((c) => ({
            id: c.id,
            position: c.position,
            call_id: c.callId,
            name: c.name,
            arguments: c.arguments,
            result: c.result,
            outcome: c.outcome,
          })),
        ),
      ],
    });
  }
  return {
    sql: `with ${parts.map((part, i) => `w${i} as (${part.sql}${i === 0 ? ` returning "id"` : ""})`).join(", ")} select 1`,
    bindings: parts.flatMap((part) => [...part.bindings]),
  };
}

/** A failed or cancelled turn: the agent takes the next message; tool calls it made are still audited. */
async function release(deps: AgentsDeps, agentId: string, turnId: string, auditEntries: AuditEntry[]): Promise<void> {
  try {
    await deps.uow.run(async (tx) => {
      await tx.em.execute(
        `update "agents_agent" set "running_turn" = null, "running_since" = null, "last_activity_at" = ? where "id" = ? and "running_turn" = ?`,
        [new Date(), agentId, turnId],
      );
      for (const entry of auditEntries) await audit(deps, tx, entry);
    });
  } catch (error) {
    deps.logger.error({ agentId, error: error instanceof Error ? error.message : String(error) }, "could not release a failed turn");
  }
}

/** One pool call as an `app.provider.chat_completion` span, with its latency and the failures it fell back past. */
async function providerCall(
  deps: AgentsDeps,
  parent: ReturnType<typeof context.active>,
  agent: AgentRow,
  chat: (span: Span) => ReturnType<AgentsDeps["pool"]["chat"]>,
): ReturnType<AgentsDeps["pool"]["chat"]> {
  const ins = deps.instruments;
  const span = ins.providers.startSpan(
    "app.provider.chat_completion",
    {
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": agent.provider,
        "gen_ai.provider.name": agent.provider,
        "gen_ai.request.model": agent.model,
      },
    },
    parent,
  );
  const started = performance.now();
  try {
    const result = await context.with(trace.setSpan(parent, span), () => chat(span));
    for (const failure of result.failures) ins.providerErrors.add(1, { "gen_ai.system": failure.provider });
    ins.providerLatency.record(performance.now() - started, { "gen_ai.system": result.provider });
    span.setAttributes({
      "gen_ai.system": result.provider,
      "gen_ai.provider.name": result.provider,
      "gen_ai.response.model": result.model,
      "app.provider.attempt": result.attempts,
      "gen_ai.usage.input_tokens": result.usage.promptTokens,
      "gen_ai.usage.output_tokens": result.usage.completionTokens,
    });
    endSpan(span, "ok");
    return result;
  } catch (error) {
    if (error instanceof AllProvidersFailedError) {
      for (const failure of error.failures) ins.providerErrors.add(1, { "gen_ai.system": failure.provider });
      ins.providerLatency.record(performance.now() - started, { "gen_ai.system": agent.provider });
      endSpan(span, { error: "every provider failed" });
    } else endSpan(span, "cancelled");
    throw error;
  }
}
