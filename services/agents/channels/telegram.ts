// The Telegram adapter (Bot API over HTTPS): connect = getMe (the handshake; a refused token is a
// ChannelPlatformError "refused", so 502), then one long-polling getUpdates loop on this instance
// (offset = the last handled update_id + 1, timeout = Channels:Telegram:PollTimeoutSeconds). Each
// text message from a person (not a bot, not this bot) goes to host.receive with the chat as the
// conversation. A failed poll is a platform-side loss: connectionChanged(false), then every 3 s a
// getMe until one succeeds (connectionChanged(true)) and polling resumes. Replies are sendMessage
// in plain text (no parse_mode), split at 4096 characters; a 429 waits `parameters.retry_after`.
// While the gateway drains for an update, host.receive refuses a message: the offset stays at its
// update_id (so Telegram answers it again to the next getUpdates, on this instance once the drain
// ends or on whichever runs the adapter after the update) and the loop waits for the drain to end
// before polling again. A connect request on an instance not holding the lease only calls getMe.
// The bot token is part of every URL (`/bot<token>/`): URLs are never logged, and any message
// leaving here has the token cut out.
import { setTimeout as sleep } from "node:timers/promises";
import { type ChannelAdapter, type ChannelFactory, ChannelPlatformError } from "./channel-adapter.js";
import { type PlatformAnswer, platformHttp, redact } from "./platform-http.js";
import { splitMessage } from "./split-message.js";
import { adapterLoop } from "./adapter-loop.js";

export const TELEGRAM_MESSAGE_LIMIT = 4096;
export const TELEGRAM_RECONNECT_MS = 3000;

export interface TelegramSettings {
  /** Channels:Telegram:AutoConnect: the state at the first start with it configured. */
  autoConnect?: boolean;
  botToken?: string;
  apiBaseUrl: string;
  pollTimeoutSeconds: number;
}

interface TelegramUser {
  id: number;
  is_bot?: boolean;
}

interface TelegramUpdate {
  update_id: number;
  message?: {
    message_id: number;
    from?: TelegramUser;
    chat: { id: number };
    text?: unknown;
  };
}

interface BotApiAnswer<T> {
  ok: boolean;
  result?: T;
  description?: string;
  error_code?: number;
}

export const createTelegramChannel: ChannelFactory<TelegramSettings> = (settings, host): ChannelAdapter => {
  const token = settings.botToken ?? "";
  const base = settings.apiBaseUrl.replace(/\/+$/, "");
  const http = platformHttp({
    secrets: () => [token],
    onRateLimited: (label, seconds) => host.logger.warn({ call: label, retryAfterSeconds: seconds }, "telegram asked to slow down (429)"),
  });
  const urlOf = (method: string, query = "") => `${base}/bot${token}/${method}${query}`;
  /** The Bot API's own words (`description`), without the token should it ever echo it. */
  const said = (answer: PlatformAnswer) =>
    redact(String((answer.body as BotApiAnswer<unknown> | undefined)?.description ?? `HTTP ${answer.status}`), [token]);

  let botId: number | undefined;

  async function getMe(signal?: AbortSignal): Promise<void> {
    const answer = await http({ label: "telegram getMe", url: urlOf("getMe"), signal });
    const body = answer.body as BotApiAnswer<TelegramUser> | undefined;
    if (answer.status !== 200 || !body?.ok || !body.result) {
      // 401/404: a token Telegram does not know; anything else: Telegram did not do it either.
      throw new ChannelPlatformError(`telegram getMe: ${answer.status} ${said(answer)}`, answer.status >= 500 ? "unreachable" : "refused");
    }
    botId = body.result.id;
  }

  function fromPerson(update: TelegramUpdate): boolean {
    const message = update.message;
    if (!message || typeof message.text !== "string" || message.text === "") return false;
    const from = message.from;
    if (!from || from.is_bot || from.id === botId) return false;
    return true;
  }

  async function poll(stop: AbortSignal): Promise<void> {
    let offset: number | undefined;
    let up = true;
    /** An update was refused (draining): no poll until messages are taken again. */
    let held = false;
    while (!stop.aborted) {
      try {
        if (held) {
          await host.accepting(stop);
          held = false;
          if (stop.aborted) return;
        }
        if (!up) {
          await getMe(stop);
          up = true;
          host.connectionChanged(true);
        }
        const query = new URLSearchParams({ timeout: String(settings.pollTimeoutSeconds), allowed_updates: '["message"]' });
        if (offset !== undefined) query.set("offset", String(offset));
        const answer = await http({
          label: "telegram getUpdates",
          url: urlOf("getUpdates", `?${query}`),
          signal: stop,
          timeoutMs: (settings.pollTimeoutSeconds + 15) * 1000,
        });
        const body = answer.body as BotApiAnswer<TelegramUpdate[]> | undefined;
        if (answer.status !== 200 || !body?.ok || !Array.isArray(body.result)) {
          throw new ChannelPlatformError(`telegram getUpdates: ${answer.status} ${said(answer)}`, "refused");
        }
        for (const update of body.result) {
          if (typeof update.update_id !== "number") continue;
          if (fromPerson(update)) {
            const message = update.message!;
            const taken = host.receive({
              channelType: "telegram",
              conversationId: String(message.chat.id),
              senderId: String(message.from!.id),
              text: message.text as string,
              replyTo: String(message.message_id),
            });
            if (!taken) {
              // Unconfirmed: the offset stays at this update, and so do the ones after it.
              held = true;
              break;
            }
          }
          offset = Math.max(offset ?? 0, update.update_id + 1);
        }
      } catch (error) {
        if (stop.aborted) return;
        const reason = redact(error instanceof Error ? error.message : String(error), [token]);
        if (up) {
          up = false;
          host.logger.warn({ channelType: "telegram", err: reason }, "telegram polling was lost; reconnecting every 3 s");
          host.connectionChanged(false, reason);
        }
        await sleep(TELEGRAM_RECONNECT_MS, undefined, { signal: stop }).catch(() => {});
      }
    }
  }

  return {
    type: "telegram",
    displayName: "Telegram",
    connectedAtStart: settings.autoConnect ?? false,
    missingSetting: () => (token === "" ? "Channels:Telegram:BotToken" : undefined),

    ...adapterLoop(getMe, poll),
    check: () => getMe(),

    async send(conversationId, content, replyTo) {
      let lastId = "";
      let first = true;
      for (const part of splitMessage(content, TELEGRAM_MESSAGE_LIMIT)) {
        const replyId = first && replyTo !== undefined && /^\d+$/.test(replyTo) ? Number(replyTo) : undefined;
        first = false;
        const answer = await http({
          label: "telegram sendMessage",
          url: urlOf("sendMessage"),
          body: {
            chat_id: conversationId,
            text: part,
            ...(replyId !== undefined ? { reply_parameters: { message_id: replyId, allow_sending_without_reply: true } } : {}),
          },
        });
        const body = answer.body as BotApiAnswer<{ message_id: number }> | undefined;
        if (answer.status !== 200 || !body?.ok || !body.result) {
          throw new ChannelPlatformError(`telegram sendMessage: ${answer.status} ${said(answer)}`, "refused");
        }
        lastId = String(body.result.message_id);
      }
      return lastId;
    },
  };
};
