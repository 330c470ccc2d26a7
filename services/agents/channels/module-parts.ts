// What chat channels add to the agent gateway module: the service, tables and migration, and the
// registry (with the built-in web channel) built at start.
// Issue 16's adapters register with the registry this start answers.
import { ChannelService } from "../../../gen/agents/v1/channel_pb.js";
import type { EventBus } from "../../runtime/bus/index.js";
import type { Database } from "../../runtime/database/index.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import type { Worker } from "../../runtime/module/index.js";
import { createUnitOfWork } from "../../runtime/outbox/index.js";
import { agentsStream } from "../agents-stream.js";
import type { AuditLog } from "../audit/types.js";
import { type ChannelRegistry, createChannelRegistry } from "./channel-registry.js";
import { channelService } from "./channel-service.js";
import { AgentsChannels0003, ChannelEntity, ChannelMessageEntity } from "./channel-table.js";
import { createWebChannel, type WebChannel } from "./web-channel.js";

export type { ChannelAdapter } from "./channel-adapter.js";
export type { ChannelRegistry } from "./channel-registry.js";

export interface ChannelsStartDeps {
  db: Database;
  bus: Pick<EventBus, "subscribe">;
  outbox: { notify(): void };
  logger: Parameters<typeof createChannelRegistry>[0]["logger"];
}

export const channelsParts = {
  services: [ChannelService],
  entities: [ChannelEntity, ChannelMessageEntity],
  migrations: [{ name: "agents-0003-channels", class: AgentsChannels0003 }],
  async start(
    deps: ChannelsStartDeps,
    options: { audit: AuditLog },
  ): Promise<{ registry: ChannelRegistry; web: WebChannel; services: ServiceRegistration[]; workers: Worker[] }> {
    const registry = createChannelRegistry({ db: deps.db, uow: createUnitOfWork(deps), audit: options.audit, logger: deps.logger });
    const web = createWebChannel(deps.db);
    await registry.register(web);
    await registry.start();
    // Other instances' connects and disconnects open and close this instance's adapters too.
    const following = await registry.follow(deps.bus, agentsStream.name);
    return {
      registry,
      web,
      services: [defineService(ChannelService, channelService(registry))],
      workers: [
        {
          name: "chat channels",
          async stop() {
            await following.stop();
            await registry.stop();
          },
        },
      ],
    };
  },
};
