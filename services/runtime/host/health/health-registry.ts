// Serving status per service name ("" is the server as a whole), as the gRPC health protocol
// reports it. The host flips entries (shutdown, a failing dependency); Watch streams follow.

export type ServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN";

/** What a Watch stream reports: a status, or that nobody registered the name. */
export type WatchedStatus = ServingStatus | "SERVICE_UNKNOWN";

export interface HealthRegistry {
  /** Sets one entry; "" is the server. Ignored after shutdown(), so nothing can flip it back. */
  setStatus(service: string, status: ServingStatus): void;
  /** Sets every known entry, the server's included. */
  setAll(status: ServingStatus): void;
  /** The status of one entry, or undefined when the name is unknown. */
  getStatus(service: string): ServingStatus | undefined;
  /** A snapshot of every entry. */
  statuses(): ReadonlyMap<string, ServingStatus>;
  /**
   * The current status, then every change, until the signal aborts or the registry shuts down.
   * Like grpc-go, a slow reader sees only the latest status, never a backlog.
   */
  watch(service: string, signal: AbortSignal): AsyncIterable<WatchedStatus>;
  /** Everything NOT_SERVING for good; Watch streams report it and end. */
  shutdown(): void;
  readonly isShutdown: boolean;
}

interface Watcher {
  readonly service: string;
  wake(): void;
}

export function createHealthRegistry(): HealthRegistry {
  const entries = new Map<string, ServingStatus>();
  const watchers = new Set<Watcher>();
  let isShutdown = false;

  const notify = (service: string): void => {
    for (const watcher of watchers) {
      if (watcher.service === service) {
        watcher.wake();
      }
    }
  };
  const put = (service: string, status: ServingStatus): void => {
    if (entries.get(service) === status) {
      return;
    }
    entries.set(service, status);
    notify(service);
  };

  return {
    get isShutdown() {
      return isShutdown;
    },
    setStatus(service, status) {
      if (!isShutdown) {
        put(service, status);
      }
    },
    setAll(status) {
      if (isShutdown) {
        return;
      }
      put("", status);
      for (const service of [...entries.keys()]) {
        put(service, status);
      }
    },
    getStatus(service) {
      return entries.get(service);
    },
    statuses() {
      return new Map(entries);
    },
    watch(service, signal) {
      return {
        async *[Symbol.asyncIterator]() {
          let wake: () => void = () => {};
          let woken = false;
          const watcher: Watcher = {
            service,
            wake() {
              woken = true;
              wake();
            },
          };
          const onAbort = (): void => watcher.wake();
          watchers.add(watcher);
          signal.addEventListener("abort", onAbort);
          try {
            let last: WatchedStatus | undefined;
            while (!signal.aborted) {
              const current: WatchedStatus = entries.get(service) ?? "SERVICE_UNKNOWN";
              if (current !== last) {
                last = current;
                yield current;
              }
              if (isShutdown || signal.aborted) {
                return;
              }
              if (!woken) {
                await new Promise<void>((resolve) => {
                  wake = resolve;
                });
              }
              woken = false;
            }
          } finally {
            watchers.delete(watcher);
            signal.removeEventListener("abort", onAbort);
          }
        },
      };
    },
    shutdown() {
      if (isShutdown) {
        return;
      }
      for (const service of new Set(["", ...entries.keys()])) {
        put(service, "NOT_SERVING");
      }
      isShutdown = true;
      // Watchers woken by put() may still be parked; wake them all so they see the shutdown.
      for (const watcher of watchers) {
        watcher.wake();
      }
    },
  };
}
