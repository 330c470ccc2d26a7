// The `assistant` provider kind against a loopback token exchange and an OpenAI-compatible API that
// accepts only the tokens the exchange issued: where the OAuth token is found, the headers, the
// cache, one exchange for concurrent callers, a 401 answered by exactly one re-exchange.
import test from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAi, startFakeOpenAi } from "../../../test/support/fake-openai.js";
import { type FakeTokenExchange, startFakeTokenExchange } from "../../../test/support/fake-token-exchange.js";
import { until } from "../../../test/support/until.js";
import {
  type AssistantProviderOptions,
  assistantConfigDir,
  createAssistantProvider,
  DEFAULT_USER_AGENT,
  discoverOAuthToken,
  ProviderCancelledError,
  ProviderError,
} from "./index.js";

const oauth = `gho_${"a1".repeat(18)}`;
let exchange: FakeTokenExchange;
let api: FakeOpenAi;
let dir: string;

test.before(async () => {
  exchange = await startFakeTokenExchange({ oauthTokens: [oauth], api: "" });
  api = await startFakeOpenAi({ prefix: "", authorize: (authorization) => exchange.acceptsBearer(authorization) });
  exchange.api = api.url;
  dir = await mkdtemp(join(tmpdir(), "assistant-"));
});
test.after.always(async () => {
  await api?.close();
  await exchange?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});
test.beforeEach(() => {
  exchange.requests.length = 0;
  exchange.ttlSeconds = 1800;
  exchange.status = undefined;
  api.requests.length = 0;
  api.script.length = 0;
  api.closedEarly = 0;
});

const emptyDir = () => join(dir, "no-such-config-dir");
const assistant = (options: Partial<AssistantProviderOptions> = {}) =>
  createAssistantProvider({
    name: "assistant",
    tokenExchangeUrl: exchange.url,
    oauthToken: oauth,
    configDir: emptyDir(),
    editorVersion: "vscode/1.99.3",
    retryBaseMs: 5,
    ...options,
  });
const messages = [{ role: "user" as const, content: "Hi" }];

test.serial(
  "exchanges the OAuth token, then chats at {endpoints.api}/chat/completions with Bearer, Editor-Version and User-Agent",
  async (t) => {
    const deltas: string[] = [];
    const result = await assistant().chat({ model: "gpt-4o", messages }, (d) => deltas.push(d.content));
    t.is(result.message.content, "Hello from the fake.");
    t.is(deltas.join(""), "Hello from the fake.");

    t.is(exchange.requests.length, 1);
    t.like(exchange.requests[0], { method: "GET", path: "/copilot_internal/v2/token" });
    t.is(exchange.requests[0]?.headers.authorization, `token ${oauth}`);
    t.is(exchange.requests[0]?.headers["editor-version"], "vscode/1.99.3");

    const [chat] = api.requests;
    t.like(chat, { method: "POST", path: "/chat/completions" });
    t.is(chat?.headers.authorization, `Bearer ${exchange.issued.at(-1)}`);
    t.is(chat?.headers["editor-version"], "vscode/1.99.3");
    t.is(chat?.headers["user-agent"], DEFAULT_USER_AGENT);
    t.regex(DEFAULT_USER_AGENT, /^meshwork\/\d+\.\d+\.\d+/);
    t.like(chat?.body, { model: "gpt-4o", stream: true, stream_options: { include_usage: true } });
  },
);

test.serial("the token is cached until 60 s before expires_at; the probe goes through the same cache", async (t) => {
  let now = Date.now();
  const client = assistant({ now: () => now });
  await client.chat({ model: "gpt-4o", messages });
  await client.chat({ model: "gpt-4o", messages });
  t.deepEqual(await client.models(), ["gpt-4o-mini", "gpt-4o"]);
  t.like(api.requests.at(-1), { method: "GET", path: "/models" });
  t.is(exchange.requests.length, 1);

  now += (1800 - 62) * 1000; // still more than 60 s left (expires_at is whole seconds)
  await client.chat({ model: "gpt-4o", messages });
  t.is(exchange.requests.length, 1);
  now += 3000; // under 60 s left: refreshed
  await client.chat({ model: "gpt-4o", messages });
  t.is(exchange.requests.length, 2);
  t.is(api.requests.at(-1)?.headers.authorization, `Bearer ${exchange.issued.at(-1)}`);
});

test.serial("a token with less than 60 s to live is not reused", async (t) => {
  exchange.ttlSeconds = 30;
  const client = assistant();
  await client.chat({ model: "gpt-4o", messages });
  await client.chat({ model: "gpt-4o", messages });
  t.is(exchange.requests.length, 2);
});

test.serial("concurrent callers share one exchange", async (t) => {
  const client = assistant();
  exchange.hold = true;
  const calls = [1, 2, 3].map(() => client.chat({ model: "gpt-4o", messages }));
  await until(() => exchange.requests.length >= 1, "the exchange request");
  exchange.release();
  const results = await Promise.all(calls);
  t.is(results.length, 3);
  t.is(exchange.requests.length, 1);
  t.is(api.chatRequests().length, 3);
  t.true(api.chatRequests().every((r) => r.headers.authorization === `Bearer ${exchange.issued.at(-1)}`));
});

test.serial("a caller cancelled while waiting for the shared exchange leaves it to the others", async (t) => {
  const client = assistant();
  exchange.hold = true;
  const controller = new AbortController();
  const cancelled = client.chat({ model: "gpt-4o", messages, signal: controller.signal });
  const other = client.chat({ model: "gpt-4o", messages });
  await until(() => exchange.requests.length >= 1, "the exchange request");
  controller.abort();
  await t.throwsAsync(cancelled, { instanceOf: ProviderCancelledError });
  exchange.release();
  t.is((await other).message.content, "Hello from the fake.");
  t.is(exchange.requests.length, 1);
  t.is(api.chatRequests().length, 1);
});

test.serial("a 401 from chat drops the token and retries exactly once with a new exchange", async (t) => {
  const client = assistant();
  await client.chat({ model: "gpt-4o", messages });
  const first = exchange.issued.at(-1)!;
  exchange.revoke(first);
  const result = await client.chat({ model: "gpt-4o", messages });
  t.is(result.message.content, "Hello from the fake.");
  t.is(exchange.requests.length, 2);
  t.deepEqual(
    api.chatRequests().map((r) => r.headers.authorization),
    [`Bearer ${first}`, `Bearer ${first}`, `Bearer ${exchange.issued.at(-1)}`],
  );
});

test.serial("a second 401 fails the provider: one re-exchange, not more", async (t) => {
  const refusing = await startFakeOpenAi({ prefix: "", authorize: () => false });
  exchange.api = refusing.url;
  try {
    const error = await t.throwsAsync(assistant().chat({ model: "gpt-4o", messages }), { instanceOf: ProviderError });
    t.is(error?.reason, "unauthorized");
    t.is(exchange.requests.length, 2);
    t.is(refusing.chatRequests().length, 2);
    for (const token of exchange.issued) t.false(JSON.stringify({ ...error, text: error?.message }).includes(token));
  } finally {
    exchange.api = api.url;
    await refusing.close();
  }
});

test.serial("an OAuth token the exchange refuses fails without retry, and the token is in no error", async (t) => {
  const bad = `gho_${"f0".repeat(18)}`;
  const error = await t.throwsAsync(assistant({ oauthToken: bad }).chat({ model: "gpt-4o", messages }), { instanceOf: ProviderError });
  t.is(error?.reason, "unauthorized");
  t.is(error?.status, 401);
  t.is(exchange.requests.length, 1);
  t.is(api.requests.length, 0);
  t.false(`${error?.message} ${error?.stack}`.includes(bad));
});

test.serial("an exchange answering 5xx is retried like the API", async (t) => {
  exchange.status = 502;
  const client = assistant();
  const call = client.chat({ model: "gpt-4o", messages }, undefined, {
    onRetry: () => {
      exchange.status = undefined;
    },
  });
  t.is((await call).message.content, "Hello from the fake.");
  t.is(exchange.requests.length, 2);
});

test.serial("no OAuth token anywhere: a ProviderError naming the sources", async (t) => {
  const error = await t.throwsAsync(assistant({ oauthToken: undefined }).chat({ model: "gpt-4o", messages }), {
    instanceOf: ProviderError,
  });
  t.is(error?.reason, "no_credentials");
  t.regex(error?.message ?? "", /ASSISTANT_TOKEN/);
  t.is(exchange.requests.length, 0);
});

test.serial("the token found in the config directory's apps.json is the one exchanged", async (t) => {
  const configDir = await mkdtemp(join(dir, "cfg-"));
  await writeFile(
    join(configDir, "apps.json"),
    JSON.stringify({
      "github.com:Iv1.x": { user: "someone", oauth_token: "ghu_notthisone" },
      "github.com:Iv1.y": { user: "me", oauth_token: oauth },
    }),
  );
  await assistant({ oauthToken: undefined, configDir }).chat({ model: "gpt-4o", messages });
  t.is(exchange.requests[0]?.headers.authorization, `token ${oauth}`);
});

test("discovery order: OAuthToken, ASSISTANT_TOKEN, TokenFilePath, apps.json, hosts.json; the first token with the prefix", async (t) => {
  const configDir = await mkdtemp(join(dir, "order-"));
  const tokenFilePath = join(configDir, "token-file.json");
  const write = (path: string, token: string) =>
    writeFile(
      path,
      JSON.stringify({ first: { user: "x", oauth_token: `ghp_${token}` }, second: { user: "y", oauth_token: `gho_${token}` } }),
    );
  await write(tokenFilePath, "file");
  await write(join(configDir, "apps.json"), "apps");
  await write(join(configDir, "hosts.json"), "hosts");
  const all = { oauthToken: "option-token", assistantTokenEnv: "env-token", tokenFilePath, configDir };

  t.deepEqual(await discoverOAuthToken(all), { token: "option-token", source: "OAuthToken" });
  t.deepEqual(await discoverOAuthToken({ ...all, oauthToken: undefined }), { token: "env-token", source: "ASSISTANT_TOKEN" });
  t.deepEqual(await discoverOAuthToken({ ...all, oauthToken: "", assistantTokenEnv: undefined }), {
    token: "gho_file",
    source: "TokenFilePath",
  });
  t.deepEqual(await discoverOAuthToken({ configDir }), { token: "gho_apps", source: "apps.json" });
  t.deepEqual(await discoverOAuthToken({ configDir, tokenFilePath: join(configDir, "missing.json") }), {
    token: "gho_apps",
    source: "apps.json",
  });
  await writeFile(join(configDir, "apps.json"), "{ not json");
  t.deepEqual(await discoverOAuthToken({ configDir }), { token: "gho_hosts", source: "hosts.json" });
  t.deepEqual(await discoverOAuthToken({ configDir, prefix: "ghp_" }), { token: "ghp_hosts", source: "hosts.json" });
  t.is(await discoverOAuthToken({ configDir, prefix: "ghx_" }), undefined);
});

test("the assistant's per-user config directory on each platform", (t) => {
  t.is(assistantConfigDir({ platform: "linux", homeDir: "/home/u", env: {} }), "/home/u/.config/github-copilot");
  t.is(assistantConfigDir({ platform: "darwin", homeDir: "/Users/u", env: { XDG_CONFIG_HOME: "/x" } }), "/x/github-copilot");
  t.is(
    assistantConfigDir({ platform: "win32", homeDir: "C:\\Users\\u", env: { LOCALAPPDATA: "/c/Users/u/AppData/Local" } }),
    "/c/Users/u/AppData/Local/github-copilot",
  );
});
