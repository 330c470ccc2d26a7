// The web channel on /hubs/agent: `SendMessage(conversationId, content)` hands the message to the
// conversation router as channel `web` (the sender is the caller's API key Name, else the
// connection id, for Channels:Web:AllowFrom) and answers at once; the reply, like any message the
// web channel delivers on this instance (POST /api/channels/web/send too), is pushed as
// `ReceiveMessage({ channelType, conversationId, content })` to each connection that has sent to
// that conversation. Each connection's push stream (PushAgentHubCalls, opened by the gateway once
// the handshake is done) is found by the connection id the gateway sends with every call. A
// SendMessage may arrive before the push stream opens: the connection's entry is made by whichever
// comes first, and calls queue until the stream takes them. While app-daemon drains the process
// for an update, SendMessage is refused like any new turn: 503 (Unavailable) with Retry-After.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type {
  PushAgentHubCallsRequest,
  SendWebChannelMessageRequest,
  SendWebChannelMessageResponseSchema,
} from "../../../gen/agents/v1/agent_pb.js";
import { WebChannelMessageSchema } from "../../../gen/agents/v1/channel_pb.js";
import { type HubClientCalls, HubClientCallsSchema, HubClientCallSchema } from "../../../gen/meshwork/api/v1/hubs_pb.js";
import { currentIdentity } from "../../runtime/auth/identity.js";
import { invalidArgument } from "../../runtime/errors/index.js";
import { HUB_CONNECTION_ID_HEADER } from "../../runtime/hubs/index.js";
import type { ChannelRegistry } from "./channel-registry.js";
import type { ConversationRouter } from "./conversations.js";
import { WEB_CHANNEL, type WebChannel } from "./web-channel.js";

/** A connection's conversations and the calls waiting for its push stream. */
interface HubConnection {
  conversations: Set<string>;
  queue: HubClientCalls[];
  wake?: () => void;
}

export interface WebHub {
  sendWebChannelMessage(
    req: SendWebChannelMessageRequest,
    ctx: HandlerContext,
  ): Promise<MessageInitShape<typeof SendWebChannelMessageResponseSchema>>;
  pushAgentHubCalls(req: PushAgentHubCallsRequest, ctx: HandlerContext): AsyncIterable<HubClientCalls>;
  stop(): void;
}

export function createWebHub(
  web: WebChannel,
  registry: Pick<ChannelRegistry, "list">,
  router: Pick<ConversationRouter, "receive">,
  /** Retry-After (seconds) of a SendMessage refused while draining. */
  drainRetryAfterSeconds = 60,
): WebHub {
  const connections = new Map<string, HubConnection>();
  let stopped = false;
  const entry = (id: string): HubConnection => {
    let found = connections.get(id);
    if (!found) connections.set(id, (found = { conversations: new Set(), queue: [] }));
    return found;
  };
  const unsubscribe = web.onMessage((row) => {
    const calls = create(HubClientCallsSchema, {
      calls: [
        create(HubClientCallSchema, {
          method: "ReceiveMessage",
          arguments: [
            anyPack(
              WebChannelMessageSchema,
              create(WebChannelMessageSchema, { channelType: WEB_CHANNEL, conversationId: row.conversationId, content: row.content }),
            ),
          ],
        }),
      ],
    });
    for (const connection of connections.values()) {
      if (!connection.conversations.has(row.conversationId)) continue;
      connection.queue.push(calls);
      connection.wake?.();
    }
  });

  return {
    async sendWebChannelMessage(req, ctx) {
      const blank = [
        ...(req.conversationId.trim() === "" ? [{ field: "conversationId", description: "is required and must not be blank" }] : []),
        ...(req.content.trim() === "" ? [{ field: "content", description: "is required and must not be blank" }] : []),
      ];
      if (blank.length) throw invalidArgument(blank);
      const state = (await registry.list()).find((c) => c.channelType === WEB_CHANNEL);
      if (!state?.isConnected) throw new ConnectError(`channel '${WEB_CHANNEL}' is not connected`, Code.Aborted);
      const connectionId = ctx.requestHeader.get(HUB_CONNECTION_ID_HEADER) ?? "";
      if (connectionId !== "") entry(connectionId).conversations.add(req.conversationId);
      const taken = router.receive({
        channelType: WEB_CHANNEL,
        conversationId: req.conversationId,
        senderId: currentIdentity().name ?? (connectionId || "anonymous"),
        text: req.content,
      });
      if (!taken) {
        throw new ConnectError("the agent gateway is draining for an update; try again shortly", Code.Unavailable, {
          "retry-after": String(drainRetryAfterSeconds),
        });
      }
      return { channelType: WEB_CHANNEL, conversationId: req.conversationId };
    },

    async *pushAgentHubCalls(_req, ctx) {
      const connectionId = ctx.requestHeader.get(HUB_CONNECTION_ID_HEADER) ?? "";
      if (connectionId === "") return;
      const connection = entry(connectionId);
      const onAbort = () => connection.wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      try {
        while (!ctx.signal.aborted && !stopped) {
          while (connection.queue.length > 0) yield connection.queue.shift()!;
          await new Promise<void>((resolve) => {
            connection.wake = resolve;
          });
          connection.wake = undefined;
        }
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        if (connections.get(connectionId) === connection) connections.delete(connectionId);
      }
    },

    stop() {
      stopped = true;
      unsubscribe();
      for (const connection of connections.values()) connection.wake?.();
      connections.clear();
    },
  };
}
