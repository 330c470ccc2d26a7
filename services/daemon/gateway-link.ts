// The link between `app-daemon run` and the agent gateway it hosts in the same process. The agents
// module attaches its side when it starts (record an event through its outbox, hold new turns,
// count the turns in flight) and detaches when it stops; the daemon's update checks, drain and
// bridge use whatever is attached, and do without when this process serves no agent gateway
// (`run serve tracking`, a gateway-only process). A leaf module on purpose: the agents module
// imports it, so it imports nothing of either side.

export interface UpdateAvailable {
  currentVersion: string;
  latestVersion: string;
  packageId: string;
}

export interface GatewaySide {
  /** Records `gateway.update.available` through the outbox (stream AGENTS, so /hubs/events shows it). */
  announceUpdate(update: UpdateAvailable): Promise<void>;
  /** While draining, new turns are refused (503 with Retry-After) and readiness fails. */
  setDraining(draining: boolean): void;
  /** Turns running in this process now. */
  turnsInFlight(): number;
  /** Resolves once no turn runs in this process (at once when none does). */
  idle(): Promise<void>;
  /** An entry of the audit ring (the bridge's observed messages). Never a token in `detail`. */
  audit(action: string, resource: string, detail: Record<string, unknown>): Promise<void>;
  /** A turn of the agent kept for `conversation` (spawned on its first message): the reply. */
  chatTurn(conversation: string, text: string): Promise<string>;
}

/**
 * Tells every conversation seen on each connected channel `text` (Updates:NotifyChannels). The
 * channel router registers it with `setChannelNotifier`; until one does, nothing is sent.
 */
export type ChannelNotifier = (text: string) => Promise<void>;

let gateway: GatewaySide | undefined;
let notifier: ChannelNotifier | undefined;

/** Attaches the agent gateway's side; answers the detach. */
export function attachGateway(side: GatewaySide): () => void {
  gateway = side;
  return () => {
    if (gateway === side) gateway = undefined;
  };
}

export function attachedGateway(): GatewaySide | undefined {
  return gateway;
}

/** The channel router's hook for update notices; answers the detach. */
export function setChannelNotifier(notify: ChannelNotifier): () => void {
  notifier = notify;
  return () => {
    if (notifier === notify) notifier = undefined;
  };
}

export function channelNotifier(): ChannelNotifier | undefined {
  return notifier;
}
