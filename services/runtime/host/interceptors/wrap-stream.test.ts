// wrapStream: each pull inside the run, errors mapped; a wrapped stream wrapped again is one layer
// with the outer run around the inner and the inner mapping first.
import test from "ava";
import { wrapStream } from "./wrap-stream.js";

async function* numbers(fail: boolean) {
  yield 1;
  yield 2;
  if (fail) throw new Error("boom");
}

test("stacked wraps run each pull outer-inside-inner and map errors inner first", async (t) => {
  const trail: string[] = [];
  const inner = wrapStream(numbers(true), {
    run: (fn) => {
      trail.push("inner");
      return fn();
    },
    mapError: (e) => new Error(`inner(${(e as Error).message})`),
  });
  const outer = wrapStream(inner, {
    run: (fn) => {
      trail.push("outer");
      return fn();
    },
    mapError: (e) => new Error(`outer(${(e as Error).message})`),
  });
  const it = outer[Symbol.asyncIterator]();
  t.deepEqual(await it.next(), { done: false, value: 1 });
  t.deepEqual(trail, ["outer", "inner", "outer", "inner"], "creating the iterator and the first pull, each outer then inner");
  t.deepEqual(await it.next(), { done: false, value: 2 });
  await t.throwsAsync(it.next(), { message: "outer(inner(boom))" });
});

test("return() reaches the source through the runs; a source without return() is simply done", async (t) => {
  let cleaned = false;
  async function* guarded() {
    try {
      yield 1;
      yield 2;
    } finally {
      cleaned = true;
    }
  }
  const it = wrapStream(wrapStream(guarded(), {}), {})[Symbol.asyncIterator]();
  await it.next();
  t.deepEqual(await it.return!(), { done: true, value: undefined });
  t.true(cleaned);
  const bare = wrapStream({ [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true as const, value: undefined }) }) }, {});
  t.deepEqual(await bare[Symbol.asyncIterator]().return!(), { done: true, value: undefined });
});
