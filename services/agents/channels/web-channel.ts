// The built-in `web` channel: nothing to open or close (so no lease: every instance serves it), connected at first start (Channels:Web:AutoConnect). A message sent
// to it is delivered by writing it to agents_channel_message (the web channel's inbox, read by
// conversation; every instance sees it) and handing it to this instance's listeners.
import { randomUUID } from "node:crypto";
import type { Database } from "../../runtime/database/index.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { ChannelMessageEntity, type ChannelMessageRow } from "./channel-table.js";

export const WEB_CHANNEL = "web";

export type WebMessageListener = (message: ChannelMessageRow) => void;

export interface WebChannel extends ChannelAdapter {
  /** Called for each message this instance delivers; answers the unsubscribe. */
  onMessage(listener: WebMessageListener): () => void;
  /** A conversation's messages, oldest first (every instance's). */
  messages(conversationId: string): Promise<ChannelMessageRow[]>;
}

export function createWebChannel(db: Pick<Database, "em">, connectedAtStart = true): WebChannel {
  const listeners = new Set<WebMessageListener>();
  return {
    type: WEB_CHANNEL,
    displayName: "Web",
    connectedAtStart,
    everyInstance: true,
    missingSetting: () => undefined,
    async connect() {},
    async disconnect() {},
    async send(conversationId, content) {
      const row: ChannelMessageRow = { id: randomUUID(), channelType: WEB_CHANNEL, conversationId, content, createdAt: new Date() };
      const em = db.em();
      em.create(ChannelMessageEntity, row);
      await em.flush();
      for (const listener of listeners) {
        try {
          listener(row);
        } catch {
          // A listener's failure is its own; the message is delivered.
        }
      }
      return row.id;
    },
    onMessage(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    messages(conversationId) {
      return db.em().find(ChannelMessageEntity, { channelType: WEB_CHANNEL, conversationId }, { orderBy: { createdAt: "asc", id: "asc" } });
    },
  };
}
