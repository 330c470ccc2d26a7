// The conversation router: what the gateway does with a message a channel delivered (the
// ChannelHost.receive of every adapter). In order: the sender is checked against
// Channels:<Type>:AllowFrom (anyone else's message is dropped and audited as
// `channel.message.denied`, never answered); the conversation's agent is found, or spawned with
// Channels:<Type>:Provider/Model on its first message (channel type + conversation id → agent id in
// agents_channel_conversation, shared by every instance; an agent stopped meanwhile, e.g. idle, is
// replaced by a new one); a turn runs; the reply goes back through the adapter's send, which splits
// it at the platform's limit. Turns of one conversation run one at a time, in arrival order (a
// queue per conversation on this instance); different conversations run side by side. A failed
// turn is answered with a short apology; the error itself goes to the log only.
//
// While app-daemon drains the process for an update, receive takes nothing (answers false): the
// adapter leaves the message unconfirmed so the platform delivers it again after the update (or
// the drain's end). A message taken before the drain began whose turn had not started yet (queued
// behind another turn of its conversation) meets the turn gate's refusal and gets the apology.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Database } from "../../runtime/database/index.js";
import { queryOn } from "../../runtime/outbox/sql.js";
import type { AuditLog } from "../audit/types.js";
import { CONVERSATION_TABLE } from "../migrations/0009-channel-conversations.js";
import type { ChannelAdapter, InboundMessage } from "./channel-adapter.js";

export const APOLOGY = "Sorry, I could not answer that just now. Please try again in a moment.";

/** The Channels:<Type>:* fields the router reads (at each message, so a hot reload applies). */
export interface ConversationSettings {
  allowFrom?: string;
  provider?: string;
  model?: string;
}

export interface ConversationRouterDeps {
  db: Pick<Database, "em">;
  audit: AuditLog;
  /** Spawns an agent for a conversation (Agents.spawn). */
  spawn(input: { provider?: string; model?: string }): Promise<{ id: string }>;
  /** Whether the agent still runs. */
  agentExists(agentId: string): Promise<boolean>;
  /** Runs one turn and answers its reply (runTurn). */
  runTurn(agentId: string, message: string): Promise<string>;
  settings(channelType: string): ConversationSettings | undefined;
  adapter(channelType: string): ChannelAdapter | undefined;
  logger: Pick<Logger, "info" | "warn" | "error">;
  /** Whether app-daemon drains the process for an update now: no new message is taken. */
  draining?: () => boolean;
}

export interface ConversationRouter {
  /** ChannelHost.receive: never throws, returns at once; false (not taken) while draining. */
  receive(message: InboundMessage): boolean;
  /** Resolves once every turn queued so far has ended (its reply or apology sent). */
  drained(): Promise<void>;
}

/** The sender ids AllowFrom lets through; empty: everyone. */
export function allowList(allowFrom: string | undefined): string[] {
  return (allowFrom ?? "")
    .split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "");
}

export function createConversationRouter(deps: ConversationRouterDeps): ConversationRouter {
  const queues = new Map<string, Promise<void>>();

  async function agentOf(message: InboundMessage): Promise<string> {
    const query = queryOn(deps.db.em());
    const rows = await query<{ agent_id: string }>(
      `select "agent_id" from "${CONVERSATION_TABLE}" where "channel_type" = ? and "conversation_id" = ?`,
      [message.channelType, message.conversationId],
    );
    const known = rows[0]?.agent_id;
    if (known !== undefined && (await deps.agentExists(known))) return known;
    return respawn(message, known);
  }

  /** A new agent for the conversation, replacing `stale` (or nothing). Another instance racing wins if it stored first. */
  async function respawn(message: InboundMessage, stale: string | undefined): Promise<string> {
    const settings = deps.settings(message.channelType) ?? {};
    const agent = await deps.spawn({ provider: settings.provider, model: settings.model });
    const now = new Date();
    const query = queryOn(deps.db.em());
    const stored = await query<{ agent_id: string }>(
      `insert into "${CONVERSATION_TABLE}" ("channel_type", "conversation_id", "agent_id", "created_at", "updated_at")
       values (?, ?, ?, ?, ?)
       on conflict ("channel_type", "conversation_id") do update set "agent_id" = excluded."agent_id", "updated_at" = excluded."updated_at"
       where "${CONVERSATION_TABLE}"."agent_id" is not distinct from ?::uuid
       returning "agent_id"`,
      [message.channelType, message.conversationId, agent.id, now, now, stale ?? null],
    );
    if (stored.length > 0) {
      deps.logger.info({ channelType: message.channelType, agentId: agent.id }, "a conversation's agent was spawned");
      return agent.id;
    }
    // Another instance stored its agent first: use that one (ours stays until it idles out).
    const rows = await query<{ agent_id: string }>(
      `select "agent_id" from "${CONVERSATION_TABLE}" where "channel_type" = ? and "conversation_id" = ?`,
      [message.channelType, message.conversationId],
    );
    return rows[0]?.agent_id ?? agent.id;
  }

  async function reply(adapter: ChannelAdapter, message: InboundMessage, text: string): Promise<void> {
    await adapter.send(message.conversationId, text, message.replyTo);
  }

  async function handle(message: InboundMessage): Promise<void> {
    const adapter = deps.adapter(message.channelType);
    if (!adapter) return;
    let answer: string;
    try {
      let agentId = await agentOf(message);
      try {
        answer = await deps.runTurn(agentId, message.text);
      } catch (error) {
        // Stopped between the lookup and the turn: once more with a new agent.
        if (!(error instanceof ConnectError && error.code === Code.NotFound)) throw error;
        agentId = await respawn(message, agentId);
        answer = await deps.runTurn(agentId, message.text);
      }
    } catch (error) {
      deps.logger.warn(
        { channelType: message.channelType, err: error instanceof Error ? error.message : String(error) },
        "a channel message's turn failed; the sender gets an apology",
      );
      answer = APOLOGY;
    }
    if (answer.trim() === "") {
      deps.logger.warn({ channelType: message.channelType }, "a channel message's turn answered nothing; nothing is sent");
      return;
    }
    try {
      await reply(adapter, message, answer);
    } catch (error) {
      deps.logger.warn(
        { channelType: message.channelType, err: error instanceof Error ? error.message : String(error) },
        "a channel reply could not be sent",
      );
    }
  }

  async function admitted(message: InboundMessage): Promise<boolean> {
    const allowed = allowList(deps.settings(message.channelType)?.allowFrom);
    if (allowed.length === 0 || allowed.includes(message.senderId)) return true;
    await deps.audit.record(deps.db.em(), {
      action: "channel.message.denied",
      severity: "warning",
      resource: message.channelType,
      detail: { conversationId: message.conversationId, senderId: message.senderId, reason: "not in AllowFrom" },
    });
    return false;
  }

  return {
    receive(message) {
      if (deps.draining?.()) return false;
      const key = `${message.channelType}\u0000${message.conversationId}`;
      const before = queues.get(key) ?? Promise.resolve();
      const next = before
        .then(async () => {
          if (await admitted(message)) await handle(message);
        })
        .catch((error: unknown) => {
          deps.logger.error(
            { channelType: message.channelType, err: error instanceof Error ? error.message : String(error) },
            "a channel message could not be handled",
          );
        })
        .finally(() => {
          if (queues.get(key) === next) queues.delete(key);
        });
      queues.set(key, next);
      return true;
    },

    async drained() {
      while (queues.size > 0) await Promise.all([...queues.values()]);
    },
  };
}
