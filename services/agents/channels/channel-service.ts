// agents.v1.ChannelService handlers: thin, over the channel registry.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ChannelService } from "../../../gen/agents/v1/channel_pb.js";
import { invalidArgument } from "../../runtime/errors/index.js";
import type { ChannelRegistry } from "./channel-registry.js";

export function channelService(registry: ChannelRegistry): ServiceImpl<typeof ChannelService> {
  return {
    async listChannels() {
      return { channels: await registry.list() };
    },

    connectChannel(req) {
      return registry.connect(req.channelType);
    },

    disconnectChannel(req) {
      return registry.disconnect(req.channelType);
    },

    async sendChannelMessage(req) {
      // Checked here rather than as REQUIRED in the contract, so the message names the fields as
      // the front's JSON does.
      const blank = [
        ...(req.conversationId.trim() === "" ? [{ field: "conversationId", description: "is required and must not be blank" }] : []),
        ...(req.content.trim() === "" ? [{ field: "content", description: "is required and must not be blank" }] : []),
      ];
      if (blank.length) throw invalidArgument(blank);
      return registry.send(req.channelType, req.conversationId, req.content);
    },
  };
}
