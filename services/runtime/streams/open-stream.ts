// What a module's streaming rpc needs around the hub: where a client resumes from, and a stream
// that opens on its first pull.

// Ids are bus sequences. Anything else (a stale or foreign id) is ignored rather than refused: a
// refused EventSource stops reconnecting for good.
const EVENT_ID = /^\d{1,15}$/;

/** The sequence to resume after, from the `Last-Event-ID` a client sent; undefined: start live. */
export function resumePosition(lastEventId: string): number | undefined {
  return EVENT_ID.test(lastEventId) ? Number(lastEventId) : undefined;
}

/**
 * A stream opened on the first pull (so its checks fail the call as a handler's would); after that,
 * the opened stream's own iterator: not a generator delegating to it, so each pull of each client
 * goes through one layer less.
 */
export function openOnFirstPull<T>(open: () => Promise<AsyncIterable<T>>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      let inner: AsyncIterator<T> | undefined;
      let opening: Promise<AsyncIterator<T>> | undefined;
      const opened = (): Promise<AsyncIterator<T>> => (opening ??= open().then((iterable) => (inner = iterable[Symbol.asyncIterator]())));
      return {
        next() {
          return inner ? inner.next() : opened().then((it) => it.next());
        },
        async return(value?: unknown) {
          const it = inner ?? (opening ? await opening.catch(() => undefined) : undefined);
          return (await it?.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}
