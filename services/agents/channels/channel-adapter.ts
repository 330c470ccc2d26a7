// What a chat channel adapter is to the gateway: `web` is built in; discord, slack, signal and
// telegram adapters (issue 16) implement the same interface and register with the channel
// registry. Whether a channel is connected lives in the database (shared by every instance); the
// registry calls the adapter to act on this instance and keeps that state.
//
// A platform adapter is built by a ChannelFactory with a ChannelHost: it hands every inbound
// text message to `host.receive` (the gateway checks AllowFrom, runs the conversation's agent turn
// and sends the reply back through `send`), and reports platform-side losses and recoveries with
// `host.connectionChanged`.
//
// One instance runs each platform adapter (channel-lease.ts): the registry opens it only on the
// instance holding the channel's lease. While app-daemon drains the process for an update,
// `host.receive` refuses new messages (answers false): the adapter leaves such a message
// unconfirmed to the platform, where it can, so it is delivered again once messages are taken.
import type { Logger } from "pino";

export interface ChannelAdapter {
  /** Lower-case type, unique in the registry and the path segment of /api/channels/{type}: `web`, `discord`, ... */
  readonly type: string;
  /** For people: "Web", "Discord", ... */
  readonly displayName: string;
  /**
   * The state a channel gets the first time any instance registers it (the database keeps it
   * after that, across restarts). `web` starts connected; an adapter that needs credentials
   * should start disconnected.
   */
  readonly connectedAtStart: boolean;
  /**
   * Opened on every instance (the web channel, which has nothing to open). Otherwise one instance
   * at a time runs the adapter: the one holding the channel's lease.
   */
  readonly everyInstance?: boolean;
  /**
   * The first setting the adapter needs that is unset (`Channels:Telegram:BotToken`), or undefined
   * when it can try to connect. GET /api/channels shows `configured` = none missing; a connect
   * request while one is missing answers 400 naming it. An unconfigured channel gets no state row
   * until it is configured, so AutoConnect applies the first time it is.
   */
  missingSetting(): string | undefined;
  /**
   * Opens the adapter on this instance. Must be idempotent (it is also called at start on every
   * instance for a channel the database says is connected). Answers once the platform's handshake
   * succeeded. Throwing leaves the state as it was: a ChannelPlatformError (the platform refused or
   * could not be reached) answers 502, anything else 503; the error's message is logged only (so it
   * must not carry a token or a key).
   */
  connect(): Promise<void>;
  /**
   * Checks the credentials with the platform without opening anything (Telegram getMe): a connect
   * request on an instance other than the lease holder calls this instead of connect. Throws as
   * connect does. Optional: without it, such a request records the state only.
   */
  check?(): Promise<void>;
  /** Closes the adapter on this instance; idempotent, and should not throw for a closed adapter. */
  disconnect(): Promise<void>;
  /**
   * Sends `content` to a conversation; answers the id the channel gave the message (the last
   * part's, when the platform's length limit splits it). `replyTo` is the inbound message's
   * `replyTo` when this answers one (Discord message_reference, Slack thread_ts). Only called
   * while connected.
   */
  send(conversationId: string, content: string, replyTo?: string): Promise<string>;
}

/** A text message a platform delivered (bot, own and non-text messages are dropped by the adapter). */
export interface InboundMessage {
  channelType: string;
  /** Where the reply goes: the chat, channel, DM or group id; with the type, it names the conversation's agent. */
  conversationId: string;
  /** The platform's id of the sender, matched against `Channels:<Type>:AllowFrom`. */
  senderId: string;
  text: string;
  /** What a reply should reference, passed back to `send` (a message id, a thread_ts). */
  replyTo?: string;
}

/** What the gateway gives an adapter. */
export interface ChannelHost {
  /**
   * Takes an inbound message (the turn runs on its own): answers true, and the adapter may confirm
   * it to the platform. Answers false while the gateway drains for an update: the message was not
   * taken, and the adapter leaves it unconfirmed where the platform allows (Telegram: the offset
   * stays; Signal: the Last-Event-ID stays) and waits with `accepting` before reading on. Never throws.
   */
  receive(message: InboundMessage): boolean;
  /** Resolves once messages are taken again (at once when they are), or when `signal` aborts. */
  accepting(signal: AbortSignal): Promise<void>;
  /** A platform-side loss (false) or recovery (true) of an open adapter: channel.disconnected / channel.connected. */
  connectionChanged(connected: boolean, reason?: string): void;
  logger: Logger;
}

/** Builds a platform adapter with its settings (`Channels:<Type>:*`) and the gateway's host. */
export type ChannelFactory<Settings> = (settings: Settings, host: ChannelHost) => ChannelAdapter;

/** The platform refused the handshake (a bad token) or could not be reached: the connect request answers 502. */
export class ChannelPlatformError extends Error {
  constructor(
    message: string,
    readonly kind: "refused" | "unreachable",
  ) {
    super(message);
    this.name = "ChannelPlatformError";
  }
}
