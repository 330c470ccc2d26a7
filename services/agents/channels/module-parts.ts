// What chat channels add to the agent gateway module: the service, tables and migrations, the
// registry with every platform's adapter (web built in; Telegram, Signal, Slack and Discord), and the conversation router every adapter hands its messages
// to. Adapters are built with the Channels:<Type>:* settings at start (their credentials need a
// restart); the router reads AllowFrom, Provider and Model at each message (hot reload).
//
// A platform adapter's loop runs detached from the request that connected it: its messages,
// turns and audit entries happen in the context captured at start (no caller identity, no request
// id), not in that of whoever happened to call connect.
//
// One instance runs each platform adapter (the lease: channel-lease.ts, kept by the registry);
// while app-daemon drains the process (`drain`), no new message is taken and adapters leave them
// unconfirmed (channel-adapter.ts).
import { AsyncLocalStorage } from "node:async_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { ChannelService } from "../../../gen/agents/v1/channel_pb.js";
import type { EventBus } from "../../runtime/bus/index.js";
import type { Database } from "../../runtime/database/index.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import type { Worker } from "../../runtime/module/index.js";
import { createUnitOfWork } from "../../runtime/outbox/index.js";
import { agentsStream } from "../agents-stream.js";
import type { AuditLog } from "../audit/types.js";
import { AgentsChannelConversations0009 } from "../migrations/0009-channel-conversations.js";
import { AgentsChannelLeases0010 } from "../migrations/0010-channel-leases.js";
import type { ChannelsSettings } from "../settings.js";
import type { ChannelAdapter, ChannelHost } from "./channel-adapter.js";
import { type ChannelRegistry, createChannelRegistry } from "./channel-registry.js";
import type { LeaseTimings } from "./channel-lease.js";
import { channelService } from "./channel-service.js";
import { AgentsChannels0003, ChannelEntity, ChannelMessageEntity } from "./channel-table.js";
import { CONVERSATION_TABLE } from "../migrations/0009-channel-conversations.js";
import { type ConversationRouter, type ConversationRouterDeps, createConversationRouter } from "./conversations.js";
import { createDiscordChannel } from "./discord.js";
import { createSlackChannel } from "./slack.js";
import { createSignalChannel } from "./signal.js";
import { createTelegramChannel } from "./telegram.js";
import { createWebChannel, type WebChannel } from "./web-channel.js";
import { createWebHub, type WebHub } from "./web-hub.js";

export type { ChannelAdapter } from "./channel-adapter.js";
export type { ChannelRegistry } from "./channel-registry.js";

export interface ChannelsStartDeps {
  db: Database;
  bus: Pick<EventBus, "subscribe">;
  outbox: { notify(): void };
  logger: Logger;
}

export interface ChannelsStartOptions {
  audit: AuditLog;
  /** The Channels section as it is now (hot reload replaces it). */
  settings: () => ChannelsSettings;
  /** The agents a conversation runs its turns on. */
  agents: Pick<ConversationRouterDeps, "spawn" | "agentExists" | "runTurn">;
  /** app-daemon's drain (the turn gate): while `draining()`, no message is taken; a web SendMessage is 503 with this Retry-After. */
  drain?: { draining(): boolean; retryAfterSeconds: number };
}

/** Test seam: lease timings in place of CHANNEL_LEASE_TIMINGS for every mesh of the process. */
export const channelsWiring: { lease?: Partial<LeaseTimings> } = {};

/** How often an adapter waiting for a drain to end looks again. */
const DRAIN_CHECK_MS = 250;

export const channelsParts = {
  services: [ChannelService],
  entities: [ChannelEntity, ChannelMessageEntity],
  migrations: [
    { name: "agents-0003-channels", class: AgentsChannels0003 },
    { name: "agents-0009-channel-conversations", class: AgentsChannelConversations0009 },
    { name: "agents-0010-channel-leases", class: AgentsChannelLeases0010 },
  ],
  async start(
    deps: ChannelsStartDeps,
    options: ChannelsStartOptions,
  ): Promise<{
    registry: ChannelRegistry;
    web: WebChannel;
    router: ConversationRouter;
    /** SendMessage and the ReceiveMessage pushes of /hubs/agent: methods of AgentService, joined to it by the module. */
    webHub: WebHub;
    /**
     * Sends `text` to every conversation seen (agents_channel_conversation) on a channel that is
     * connected; a channel that is not, or a send that fails, is skipped (logged). Answers the count sent.
     */
    notifyConversations(text: string): Promise<number>;
    services: ServiceRegistration[];
    workers: Worker[];
  }> {
    const detached = AsyncLocalStorage.snapshot();
    const registry = createChannelRegistry({
      db: deps.db,
      uow: createUnitOfWork(deps),
      audit: options.audit,
      logger: deps.logger,
      lease: channelsWiring.lease,
    });
    const draining = () => options.drain?.draining() ?? false;
    const adapters = new Map<string, ChannelAdapter>();
    const router = createConversationRouter({
      db: deps.db,
      audit: options.audit,
      ...options.agents,
      settings: (type) => (options.settings() as Record<string, ChannelsSettings[keyof ChannelsSettings] | undefined>)[type],
      adapter: (type) => adapters.get(type),
      logger: deps.logger,
      draining,
    });
    const hostFor = (type: string): ChannelHost => {
      const logger = deps.logger.child({ channelType: type });
      return {
        logger,
        receive: (message) => router.receive(message),
        async accepting(signal) {
          while (draining() && !signal.aborted) await sleep(DRAIN_CHECK_MS, undefined, { signal }).catch(() => {});
        },
        connectionChanged: (connected, reason) => {
          registry.reportConnection(type, connected, reason).catch((error: unknown) => {
            logger.warn(
              { err: error instanceof Error ? error.message : String(error) },
              "a channel's platform-side change could not be recorded",
            );
          });
        },
      };
    };
    const settings = options.settings();
    const web = createWebChannel(deps.db, settings.web.autoConnect);
    const outsideRequests = (adapter: ChannelAdapter): ChannelAdapter => ({ ...adapter, connect: () => detached(() => adapter.connect()) });
    const all: ChannelAdapter[] = [
      web,
      outsideRequests(createTelegramChannel(settings.telegram, hostFor("telegram"))),
      outsideRequests(createSignalChannel(settings.signal, hostFor("signal"))),
      outsideRequests(createSlackChannel(settings.slack, hostFor("slack"))),
      outsideRequests(createDiscordChannel(settings.discord, hostFor("discord"))),
    ];
    for (const adapter of all) {
      adapters.set(adapter.type, adapter);
      await registry.register(adapter);
    }
    await registry.start();
    // Other instances' connects and disconnects open and close this instance's adapters too.
    const following = await registry.follow(deps.bus, agentsStream.name);
    const webHub = createWebHub(web, registry, router, options.drain?.retryAfterSeconds);
    return {
      registry,
      web,
      router,
      webHub,
      async notifyConversations(text) {
        const connected = new Set((await registry.list()).filter((c) => c.isConnected).map((c) => c.channelType));
        const seen = await deps.db
          .em()
          .execute<{ channel_type: string; conversation_id: string }[]>(
            `select "channel_type", "conversation_id" from "${CONVERSATION_TABLE}" order by "created_at"`,
          );
        let sent = 0;
        for (const row of seen) {
          if (!connected.has(row.channel_type)) continue;
          try {
            await registry.send(row.channel_type, row.conversation_id, text);
            sent++;
          } catch (error) {
            deps.logger.warn(
              { channelType: row.channel_type, err: error instanceof Error ? error.message : String(error) },
              "a notice could not be sent to a conversation",
            );
          }
        }
        return sent;
      },
      services: [defineService(ChannelService, channelService(registry))],
      workers: [
        {
          name: "chat channels",
          async stop() {
            webHub.stop();
            await following.stop();
            await registry.stop();
            await router.drained();
          },
        },
      ],
    };
  },
};
