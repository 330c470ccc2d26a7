import test from "ava";
import { inspect } from "node:util";
import { ConfigError } from "../config/index.js";
import { createApiKeyStore } from "./api-key-store.js";

const ops = { name: "ops", role: "operator", key: "ops-key-0123456789abcdef" } as const;
const feed = { name: "feed", role: "ingest", key: "feed-key-0123456789abcdef" } as const;

test("a configured key resolves to its name and role; anything else to nothing", (t) => {
  const store = createApiKeyStore([ops, feed]);
  t.is(store.size, 2);
  t.deepEqual(store.lookup(ops.key), { name: "ops", role: "operator" });
  t.deepEqual(store.lookup(feed.key), { name: "feed", role: "ingest" });
  for (const wrong of ["", "ops", `${ops.key} `, ops.key.toUpperCase(), ops.key.slice(0, -1), `${ops.key}x`, "x".repeat(10_000)]) {
    t.is(store.lookup(wrong), undefined, JSON.stringify(wrong.slice(0, 30)));
  }
});

test("no keys: an empty store that knows nothing", (t) => {
  const store = createApiKeyStore([]);
  t.is(store.size, 0);
  t.is(store.lookup(ops.key), undefined);
});

test("the store keeps no clear key, and the caller's list can be dropped", (t) => {
  const keys: { name: string; role: "ingest" | "operator"; key: string }[] = [{ ...ops }, { ...feed }];
  const store = createApiKeyStore(keys);
  keys[0]!.key = "changed-after-start-000000";
  t.deepEqual(store.lookup(ops.key), { name: "ops", role: "operator" }, "it answers from its own digests");
  t.false(inspect(store, { depth: 10, showHidden: true }).includes(ops.key));
});

test("the same key twice is refused without showing it", (t) => {
  const error = t.throws(() => createApiKeyStore([ops, feed, { name: "again", role: "ingest", key: ops.key }]), {
    instanceOf: ConfigError,
  });
  t.regex(error!.message, /Auth:ApiKeys: items 0 and 2 have the same Key/);
  t.false(error!.message.includes(ops.key));
});
