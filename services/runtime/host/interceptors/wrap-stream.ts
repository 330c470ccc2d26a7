// A streaming handler runs lazily, while the adapter pulls its messages, long after the
// interceptor's `await next(req)` returned; wrapping the pull loop is the only way to reach it.

export interface WrapStreamOptions {
  /** Runs each pull (and so the handler code it resumes) inside some context. */
  run?: <R>(fn: () => R) => R;
  /** Replaces an error the stream throws. */
  mapError?: (error: unknown) => unknown;
}

export function wrapStream<T>(source: AsyncIterable<T>, options: WrapStreamOptions): AsyncIterable<T> {
  const run = options.run ?? (<R>(fn: () => R): R => fn());
  const mapError = options.mapError ?? ((error: unknown) => error);
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = run(() => source[Symbol.asyncIterator]());
      return {
        async next() {
          try {
            return await run(() => it.next());
          } catch (error) {
            throw mapError(error);
          }
        },
        async return(value?: unknown) {
          if (it.return === undefined) {
            return { done: true, value: undefined };
          }
          return await run(() => it.return!(value));
        },
      };
    },
  };
}
