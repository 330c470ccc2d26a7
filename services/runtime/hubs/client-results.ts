// SignalR client results: a hub method's handler asks the connected client that invoked it to run
// a client method and waits for its answer (the client's return value). The hub server registers
// each open connection here by its id (sent to handlers as the `x-meshwork-hub-connection`
// header); a handler in the same process looks its caller up. Generic: no hub or method names.

export type HubClientCaller = (target: string, args: readonly unknown[], signal?: AbortSignal) => Promise<unknown>;

const open = new Map<string, HubClientCaller>();

/** The hub connection header a handler reads its connection id from. */
export const HUB_CONNECTION_ID_HEADER = "x-meshwork-hub-connection";

export function registerHubClient(connectionId: string, caller: HubClientCaller): () => void {
  open.set(connectionId, caller);
  return () => {
    if (open.get(connectionId) === caller) open.delete(connectionId);
  };
}

/** The caller of an open connection of this process, or undefined. */
export function hubClientOf(connectionId: string | null | undefined): HubClientCaller | undefined {
  return connectionId ? open.get(connectionId) : undefined;
}
