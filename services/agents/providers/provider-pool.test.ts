// The provider pool over two loopback OpenAI-compatible servers: fallback by priority with each
// provider's own default model, skipping a failed provider until a probe succeeds and returning to
// it, what GET /api/providers shows, and logs that name providers but never carry a key.
import test from "ava";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type FakeOpenAi, startFakeOpenAi } from "../../../test/support/fake-openai.js";
import { until } from "../../../test/support/until.js";
import { AllProvidersFailedError, createOpenAiProvider, ProviderCancelledError, ProviderPool, type ProviderPoolOptions } from "./index.js";

let primary: FakeOpenAi;
let secondary: FakeOpenAi;
let tertiary: FakeOpenAi;
test.before(async () => {
  [primary, secondary, tertiary] = await Promise.all([
    startFakeOpenAi({ models: ["p-large", "p-small"] }),
    startFakeOpenAi({ models: ["s-default", "s-other"] }),
    startFakeOpenAi({ models: ["t-default"] }),
  ]);
});
test.after.always(async () => {
  await Promise.all([primary?.close(), secondary?.close(), tertiary?.close()]);
});
test.beforeEach(() => {
  for (const fake of [primary, secondary, tertiary]) {
    fake.requests.length = 0;
    fake.script.length = 0;
    fake.modelsStatus = undefined;
    fake.closedEarly = 0;
  }
});

function pool(options: Partial<ProviderPoolOptions> = {}) {
  const provider = (name: string, fake: FakeOpenAi) =>
    createOpenAiProvider({ name, baseUrl: fake.url, apiKey: fake.apiKey, retryBaseMs: 1 });
  // Listed out of order: priority decides.
  return new ProviderPool({
    providers: [
      { client: provider("tertiary", tertiary), models: ["t-default"], priority: 30 },
      { client: provider("primary", primary), models: ["p-large", "p-small"], priority: 10 },
      { client: provider("secondary", secondary), models: ["s-default", "s-other"] },
    ],
    ...options,
  });
}
const messages = [{ role: "user" as const, content: "Hello?" }];
const failFourTimes = (fake: FakeOpenAi) => {
  for (let i = 0; i < 4; i++) fake.script.push({ kind: "status", status: 500 });
};

test.serial("GET /api/providers rows: by priority, the first available is the default, no key anywhere", (t) => {
  const providers = pool();
  t.deepEqual(providers.list(), [
    { name: "primary", kind: "openai", models: ["p-large", "p-small"], available: true, isDefault: true },
    { name: "tertiary", kind: "openai", models: ["t-default"], available: true, isDefault: false },
    { name: "secondary", kind: "openai", models: ["s-default", "s-other"], available: true, isDefault: false },
  ]);
  t.deepEqual(providers.defaultChoice(), { provider: "primary", model: "p-large" });
  t.deepEqual(pool({ defaultProvider: "secondary" }).defaultChoice(), { provider: "secondary", model: "s-default" });
  const shown = JSON.stringify(providers.list());
  for (const fake of [primary, secondary, tertiary]) t.false(shown.includes(fake.apiKey));
});

test.serial("the chosen provider and model answer when they can", async (t) => {
  const result = await pool().chat({ provider: "secondary", model: "s-other", messages });
  t.like(result, { provider: "secondary", requestedModel: "s-other", failures: [] });
  t.like(secondary.chatRequests()[0]?.body, { model: "s-other" });
  t.is(primary.chatRequests().length, 0);
});

test.serial("a failed provider falls back to the others by priority, each with its own default model", async (t) => {
  failFourTimes(primary);
  failFourTimes(tertiary);
  const fallbacks: string[] = [];
  const deltas: string[] = [];
  const result = await pool().chat({ provider: "primary", model: "p-small", messages }, (d) => deltas.push(`${d.provider}:${d.content}`), {
    onFallback: (failure, next) => fallbacks.push(`${failure.provider}->${next}`),
  });
  t.is(result.provider, "secondary");
  t.is(result.requestedModel, "s-default");
  t.deepEqual(
    result.failures.map((f) => [f.provider, f.reason, f.attempts]),
    [
      ["primary", "server_error", 4],
      ["tertiary", "server_error", 4],
    ],
  );
  t.deepEqual(fallbacks, ["primary->tertiary", "tertiary->secondary"]);
  t.is(deltas.join(""), "secondary:Hellosecondary: fromsecondary: thesecondary: fakesecondary:.");
  t.deepEqual(
    primary.chatRequests().map((r) => (r.body as { model: string }).model),
    ["p-small", "p-small", "p-small", "p-small"],
  );
  t.deepEqual(
    tertiary.chatRequests().map((r) => (r.body as { model: string }).model),
    ["t-default", "t-default", "t-default", "t-default"],
  );
  t.like(secondary.chatRequests()[0]?.body, { model: "s-default" });
});

test.serial("a failed provider is skipped until a probe succeeds, then turns return to it", async (t) => {
  const providers = pool();
  failFourTimes(primary);
  t.is((await providers.chat({ messages })).provider, "tertiary");
  t.false(providers.isAvailable("primary"));
  t.like(providers.list()[0], { name: "primary", available: false, isDefault: false });
  t.like(providers.list()[1], { name: "tertiary", isDefault: true });

  t.is((await providers.chat({ provider: "primary", messages })).provider, "tertiary");
  t.is(primary.chatRequests().length, 4, "the skipped provider got no request");

  primary.modelsStatus = 500;
  await providers.probe();
  t.false(providers.isAvailable("primary"));
  t.is((await providers.chat({ provider: "primary", messages })).provider, "tertiary");

  primary.modelsStatus = undefined;
  await providers.probe();
  t.true(providers.isAvailable("primary"));
  const back = await providers.chat({ provider: "primary", messages });
  t.is(back.provider, "primary");
  t.is(back.requestedModel, "p-large");
  t.is(primary.chatRequests().length, 5);
  t.deepEqual(
    primary.requests.filter((r) => r.path === "/v1/models").map((r) => r.method),
    ["GET", "GET"],
  );
});

test.serial("the probe timer brings a provider back on its own", async (t) => {
  const providers = pool({ probeIntervalMs: 20 });
  failFourTimes(primary);
  primary.modelsStatus = 503;
  await providers.chat({ messages });
  providers.start();
  try {
    await until(() => primary.requests.filter((r) => r.path === "/v1/models").length >= 2, "two probes of the primary");
    t.false(providers.isAvailable("primary"));
    primary.modelsStatus = undefined;
    await until(() => providers.isAvailable("primary"), "the primary to come back");
    t.is((await providers.chat({ messages })).provider, "primary");
  } finally {
    await providers.stop();
  }
});

test.serial("every provider down: AllProvidersFailedError naming them, and no key in it or in the logs", async (t) => {
  const lines: string[] = [];
  const logger = pino(
    { level: "debug" },
    new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    }),
  );
  const providers = pool({ logger });
  for (const fake of [primary, secondary, tertiary]) failFourTimes(fake);
  const error = await t.throwsAsync(providers.chat({ messages }), { instanceOf: AllProvidersFailedError });
  t.deepEqual(
    error?.failures.map((f) => f.provider),
    ["primary", "tertiary", "secondary"],
  );
  const again = await t.throwsAsync(providers.chat({ messages }), { instanceOf: AllProvidersFailedError });
  t.deepEqual(again?.skipped, ["primary", "tertiary", "secondary"]);
  t.is(primary.chatRequests().length, 4);

  t.is(lines.filter((l) => l.includes("skipped until a probe succeeds")).length, 3);
  const everything = [...lines, error?.message, again?.message, JSON.stringify(error)].join("\n");
  for (const fake of [primary, secondary, tertiary]) t.false(everything.includes(fake.apiKey));
});

test.serial("a cancelled turn is not a provider failure: no fallback, the provider stays available", async (t) => {
  primary.script.push({ kind: "hang", content: ["…"] });
  const providers = pool();
  const controller = new AbortController();
  const deltas: string[] = [];
  const call = providers.chat({ messages, signal: controller.signal }, (d) => deltas.push(d.content));
  await until(() => deltas.length === 1, "the first delta");
  controller.abort();
  await t.throwsAsync(call, { instanceOf: ProviderCancelledError });
  await until(() => primary.closedEarly === 1, "the upstream request to close");
  t.true(providers.isAvailable("primary"));
  t.is(tertiary.chatRequests().length + secondary.chatRequests().length, 0);
});

test.serial("an unknown provider is refused by name", async (t) => {
  await t.throwsAsync(pool().chat({ provider: "nope", messages }), { instanceOf: RangeError, message: /nope/ });
});
