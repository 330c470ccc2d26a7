// A streaming handler runs lazily, while the adapter pulls its messages, long after the
// interceptor's `await next(req)` returned; wrapping the pull loop is the only way to reach it.

export interface WrapStreamOptions {
  /** Runs each pull (and so the handler code it resumes) inside some context. */
  run?: <R>(fn: () => R) => R;
  /** Replaces an error the stream throws. */
  mapError?: (error: unknown) => unknown;
}

type Run = <R>(fn: () => R) => R;

const direct: Run = (fn) => fn();
const unchanged = (error: unknown): unknown => error;

/** What a wrapped stream remembers, so wrapping it again adds no second layer. */
const layers = new WeakMap<AsyncIterable<unknown>, { source: AsyncIterable<unknown>; run: Run; mapError: (error: unknown) => unknown }>();

/**
 * The stream's messages, each pull run through `options.run` and each error through
 * `options.mapError`. Wrapping a stream this function made folds the two into one layer (the
 * outer run around the inner one, the inner mapError first): interceptors stacked on one call
 * cost one async step per message, not one each.
 */
export function wrapStream<T>(source: AsyncIterable<T>, options: WrapStreamOptions): AsyncIterable<T> {
  const outerRun = options.run ?? direct;
  const outerMap = options.mapError ?? unchanged;
  const inner = layers.get(source);
  const base = (inner?.source ?? source) as AsyncIterable<T>;
  const run: Run = inner ? (fn) => outerRun(() => inner.run(fn)) : outerRun;
  const mapError = inner ? (error: unknown) => outerMap(inner.mapError(error)) : outerMap;
  const wrapped: AsyncIterable<T> = {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = run(() => base[Symbol.asyncIterator]());
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
  layers.set(wrapped, { source: base, run, mapError });
  return wrapped;
}
