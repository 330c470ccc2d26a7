// The `openai` provider kind against a loopback server speaking OpenAI's chat-completions protocol
// (test/support/fake-openai.ts): streamed deltas, tool calls from fragments, usage, the retry rules,
// aborts that close the upstream socket, and keys that appear in no error.
import test from "ava";
import { createServer } from "node:net";
import { type FakeOpenAi, startFakeOpenAi } from "../../../test/support/fake-openai.js";
import { until } from "../../../test/support/until.js";
import { generateDeviceCa } from "../../protection/pki/index.js";
import { createOpenAiProvider, ProviderCancelledError, ProviderError, type RetryInfo, type ToolDefinition } from "./index.js";

let fake: FakeOpenAi;
test.before(async () => {
  fake = await startFakeOpenAi();
});
test.after.always(async () => {
  await fake?.close();
});
test.beforeEach(() => {
  fake.requests.length = 0;
  fake.script.length = 0;
  fake.closedEarly = 0;
});

const provider = (apiKey = fake.apiKey) => createOpenAiProvider({ name: "primary", baseUrl: fake.url, apiKey, retryBaseMs: 5 });
const messages = [
  { role: "system" as const, content: "Be brief." },
  { role: "user" as const, content: "Say hello." },
];
const tools: ToolDefinition[] = [
  {
    type: "function",
    function: { name: "think", description: "Think.", parameters: { type: "object", properties: { thought: { type: "string" } } } },
  },
];

test.serial("turns one after the other reuse one kept-alive connection: a finished reply does not close it", async (t) => {
  const chatty = provider();
  const before = fake.connections;
  for (let i = 0; i < 3; i++) {
    const result = await chatty.chat({ model: "gpt-4o-mini", messages, tools }, () => {});
    t.is(result.message.content, "Hello from the fake.");
  }
  t.is(fake.connections - before, 1);
  t.is(fake.closedEarly, 0);
});

test.serial("streams the deltas in order and answers the assembled message, finish reason and usage", async (t) => {
  fake.script.push({ kind: "reply", content: ["Hel", "lo", ", ", "world"], usage: { prompt_tokens: 12, completion_tokens: 4 } });
  const deltas: string[] = [];
  const result = await provider().chat({ model: "gpt-4o-mini", messages, tools }, (d) => deltas.push(d.content));
  t.deepEqual(deltas, ["Hel", "lo", ", ", "world"]);
  t.deepEqual(result.message, { role: "assistant", content: "Hello, world" });
  t.is(result.finishReason, "stop");
  t.deepEqual(result.usage, { promptTokens: 12, completionTokens: 4, totalTokens: 16 });
  t.is(result.model, "gpt-4o-mini");
  t.is(result.attempts, 1);

  const [request] = fake.requests;
  t.is(request?.method, "POST");
  t.is(request?.path, "/v1/chat/completions");
  t.is(request?.headers.authorization, `Bearer ${fake.apiKey}`);
  t.is(request?.headers["content-type"], "application/json");
  t.deepEqual(request?.body, { model: "gpt-4o-mini", messages, tools, stream: true, stream_options: { include_usage: true } });
});

test.serial("parallel tool calls sent in interleaved fragments are assembled by index", async (t) => {
  fake.script.push({
    kind: "reply",
    content: ["Let me think."],
    interleave: true,
    fragment: 3,
    toolCalls: [
      { id: "call_a", name: "think", arguments: '{"thought":"first idea"}' },
      { id: "call_b", name: "think", arguments: '{"thought":"second, longer idea"}' },
      { id: "call_c", name: "read_file", arguments: '{"path":"/tmp/x"}' },
    ],
  });
  const result = await provider().chat({ model: "gpt-4o", messages, tools });
  t.is(result.finishReason, "tool_calls");
  t.is(result.message.content, "Let me think.");
  t.deepEqual(result.message.tool_calls, [
    { id: "call_a", type: "function", function: { name: "think", arguments: '{"thought":"first idea"}' } },
    { id: "call_b", type: "function", function: { name: "think", arguments: '{"thought":"second, longer idea"}' } },
    { id: "call_c", type: "function", function: { name: "read_file", arguments: '{"path":"/tmp/x"}' } },
  ]);
  for (const call of result.message.tool_calls ?? []) t.notThrows(() => JSON.parse(call.function.arguments));
});

test.serial("events cut into 5-byte writes, with keep-alive comments and CRLF, read the same", async (t) => {
  fake.script.push({
    kind: "reply",
    content: ["Grüße", " 😀", " done"],
    splitBytes: 5,
    comments: true,
    toolCalls: [{ id: "call_z", name: "think", arguments: '{"thought":"ü"}' }],
  });
  const deltas: string[] = [];
  const result = await provider().chat({ model: "gpt-4o", messages }, (d) => deltas.push(d.content));
  t.deepEqual(deltas, ["Grüße", " 😀", " done"]);
  t.is(result.message.tool_calls?.[0]?.function.arguments, '{"thought":"ü"}');
  t.is(result.usage.totalTokens, 17 + 4);
});

test.serial("5xx answers are retried 3 times after retryBaseMs × 2^n, then the reply is taken", async (t) => {
  fake.script.push({ kind: "status", status: 500 }, { kind: "status", status: 502 }, { kind: "status", status: 503 });
  const retries: RetryInfo[] = [];
  const result = await provider().chat({ model: "gpt-4o-mini", messages }, undefined, { onRetry: (r) => retries.push(r) });
  t.is(result.message.content, "Hello from the fake.");
  t.is(result.attempts, 4);
  t.is(fake.chatRequests().length, 4);
  t.deepEqual(
    retries.map((r) => [r.attempt, r.reason, r.status, r.delayMs]),
    [
      [1, "server_error", 500, 5],
      [2, "server_error", 502, 10],
      [3, "server_error", 503, 20],
    ],
  );
});

test.serial("a fourth 5xx fails the provider with ProviderError after 4 requests", async (t) => {
  for (let i = 0; i < 4; i++) fake.script.push({ kind: "status", status: 500 });
  const error = await t.throwsAsync(provider().chat({ model: "gpt-4o-mini", messages }), { instanceOf: ProviderError });
  t.is(error?.reason, "server_error");
  t.is(error?.status, 500);
  t.is(error?.attempts, 4);
  t.is(error?.provider, "primary");
  t.is(fake.chatRequests().length, 4);
});

test.serial("a socket dropped mid-stream is retried; deltas say which attempt they belong to", async (t) => {
  fake.script.push({ kind: "drop", content: ["Partial"] }, { kind: "reply", content: ["Whole", " reply"] });
  const deltas: string[] = [];
  const retries: RetryInfo[] = [];
  const result = await provider().chat({ model: "gpt-4o-mini", messages }, (d) => deltas.push(`${d.attempt}:${d.content}`), {
    onRetry: (r) => retries.push(r),
  });
  t.deepEqual(deltas, ["1:Partial", "2:Whole", "2: reply"]);
  t.is(result.message.content, "Whole reply");
  t.deepEqual(
    retries.map((r) => r.reason),
    ["unreachable"],
  );
  t.is(fake.chatRequests().length, 2);
});

test.serial("an unreachable server is tried 4 times, then fails as unreachable", async (t) => {
  const port = await freePort();
  const retries: RetryInfo[] = [];
  const client = createOpenAiProvider({ name: "gone", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "sk-gone", retryBaseMs: 1 });
  const error = await t.throwsAsync(client.chat({ model: "m", messages }, undefined, { onRetry: (r) => retries.push(r) }), {
    instanceOf: ProviderError,
  });
  t.is(error?.reason, "unreachable");
  t.is(error?.attempts, 4);
  t.is(retries.length, 3);
  t.regex(error?.message ?? "", /ECONNREFUSED/);
});

test.serial("an empty reply is retried once", async (t) => {
  fake.script.push({ kind: "empty" }, { kind: "reply", content: ["Now something"] });
  const result = await provider().chat({ model: "gpt-4o-mini", messages });
  t.is(result.message.content, "Now something");
  t.is(fake.chatRequests().length, 2);

  fake.requests.length = 0;
  fake.script.push({ kind: "empty" }, { kind: "empty" }, { kind: "reply", content: ["never asked for"] });
  const error = await t.throwsAsync(provider().chat({ model: "gpt-4o-mini", messages }), { instanceOf: ProviderError });
  t.is(error?.reason, "empty_reply");
  t.is(fake.chatRequests().length, 2);
});

test.serial("aborting the signal closes the upstream request and rejects with ProviderCancelledError", async (t) => {
  fake.script.push({ kind: "hang", content: ["Thinking"] });
  const controller = new AbortController();
  const deltas: string[] = [];
  const call = provider().chat({ model: "gpt-4o-mini", messages, signal: controller.signal }, (d) => deltas.push(d.content));
  await until(() => deltas.length === 1, "the first delta");
  t.is(fake.closedEarly, 0);
  controller.abort(new Error("turn cancelled"));
  const error = await t.throwsAsync(call, { instanceOf: ProviderCancelledError });
  t.is((error?.cause as Error | undefined)?.message, "turn cancelled");
  await until(() => fake.closedEarly === 1, "the fake to see the socket close");
  t.is(fake.chatRequests().length, 1);
});

test.serial("aborting during the backoff stops the retries", async (t) => {
  fake.script.push({ kind: "status", status: 500 });
  const controller = new AbortController();
  const client = createOpenAiProvider({ name: "primary", baseUrl: fake.url, apiKey: fake.apiKey, retryBaseMs: 60_000 });
  const call = client.chat({ model: "gpt-4o-mini", messages, signal: controller.signal }, undefined, {
    onRetry: () => controller.abort(),
  });
  await t.throwsAsync(call, { instanceOf: ProviderCancelledError });
  t.is(fake.chatRequests().length, 1);
});

test.serial("a refused key fails at once, and neither the key nor the provider's text reaches the error", async (t) => {
  const wrongKey = "sk-wrong-0123456789abcdef0123456789";
  const error = await t.throwsAsync(provider(wrongKey).chat({ model: "gpt-4o-mini", messages }), { instanceOf: ProviderError });
  t.is(error?.reason, "unauthorized");
  t.is(error?.status, 401);
  t.is(fake.chatRequests().length, 1);
  const everything = JSON.stringify({ ...error, text: error?.message, stack: error?.stack });
  t.false(everything.includes(wrongKey));
  t.false(everything.includes(fake.apiKey));
  t.false(everything.includes("Incorrect API key"));
});

test.serial("models() lists the ids of GET {BaseUrl}/models; a failing probe is a ProviderError", async (t) => {
  t.deepEqual(await provider().models(), ["gpt-4o-mini", "gpt-4o"]);
  t.like(fake.requests.at(-1), { method: "GET", path: "/v1/models" });
  t.is(fake.requests.at(-1)?.headers.authorization, `Bearer ${fake.apiKey}`);
  fake.modelsStatus = 503;
  try {
    const error = await t.throwsAsync(provider().models(), { instanceOf: ProviderError });
    t.is(error?.status, 503);
  } finally {
    fake.modelsStatus = undefined;
  }
});

test.serial("DangerouslyDisableSslValidation lets that provider reach a self-signed server, and no other", async (t) => {
  const { certPem, keyPem } = await generateDeviceCa({ commonName: "127.0.0.1" });
  const tlsFake = await startFakeOpenAi({ tls: { key: keyPem, cert: certPem } });
  try {
    const insecure = createOpenAiProvider({ name: "inspected", baseUrl: tlsFake.url, apiKey: tlsFake.apiKey, disableTlsValidation: true });
    const strict = createOpenAiProvider({ name: "strict", baseUrl: tlsFake.url, apiKey: tlsFake.apiKey, retryBaseMs: 1 });
    t.is((await insecure.chat({ model: "gpt-4o-mini", messages })).message.content, "Hello from the fake.");
    const error = await t.throwsAsync(strict.chat({ model: "gpt-4o-mini", messages }), { instanceOf: ProviderError });
    t.is(error?.reason, "unreachable");
    t.is(tlsFake.chatRequests().length, 1, "the strict client never got past the TLS handshake");
    insecure.close();
    strict.close();
  } finally {
    await tlsFake.close();
  }
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
