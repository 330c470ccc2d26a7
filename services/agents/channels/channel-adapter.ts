// What a chat channel adapter is to the gateway: `web` is built in; discord, slack, signal and
// telegram adapters (issue 16) implement the same interface and register with the channel
// registry. Whether a channel is connected lives in the database (shared by every instance); the
// registry calls the adapter to act on this instance and keeps that state.

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
   * Opens the adapter on this instance. Must be idempotent (it is also called at start on every
   * instance for a channel the database says is connected). Throwing leaves the state as it was:
   * the request answers 503 naming the channel, and the error's message is logged (so it must not
   * carry a token or a key).
   */
  connect(): Promise<void>;
  /** Closes the adapter on this instance; idempotent, and should not throw for a closed adapter. */
  disconnect(): Promise<void>;
  /** Sends `content` to a conversation; answers the id the channel gave the message. Only called while connected. */
  send(conversationId: string, content: string): Promise<string>;
}
