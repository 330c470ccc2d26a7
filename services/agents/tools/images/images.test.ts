// analyze_image and describe_image through a real chat-completions client against the fake OpenAI
// server: the request carries the image as an image_url data URL; a URL goes through the SSRF guard.
// Serial: the tests share the fake and its script of replies.
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { type FakeOpenAi, startFakeOpenAi } from "../../../../test/support/fake-openai.js";
import { type ChatMessage, createOpenAiProvider } from "../../providers/index.js";
import { defaultToolsSettings } from "../settings.js";
import { testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { imageTools } from "./index.js";

const analyze = toolNamed(imageTools, "analyze_image");
const describe = toolNamed(imageTools, "describe_image");
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("rest of a tiny png")]);

let fake: FakeOpenAi;
test.before(async () => {
  fake = await startFakeOpenAi();
});
test.after.always(() => fake?.close());

async function context(t: ExecutionContext, web: { allowLoopback?: boolean } = {}) {
  const provider = createOpenAiProvider({ name: "fake", baseUrl: fake.url, apiKey: fake.apiKey, maxRetries: 0 });
  t.teardown(() => provider.close());
  const defaults = defaultToolsSettings();
  const ctx = await testToolContext({ settings: { web: { ...defaults.web, ...web } }, agentId: `agent-${t.title.length}` });
  const asked: (string | undefined)[] = [];
  ctx.services.chat = async (agentId, request) => {
    asked.push(agentId);
    const result = await provider.chat({ model: "gpt-4o", messages: request.messages as ChatMessage[], signal: request.signal });
    return result.message.content ?? "";
  };
  return { ctx, asked };
}

interface Part {
  type: string;
  text?: string;
  image_url?: { url: string; detail?: string };
}

/** The user message's parts of the chat request whose text part says `marker`. */
function partsOf(marker: string): Part[] {
  const request = fake.chatRequests().find((r) => JSON.stringify(r.body).includes(marker));
  if (!request) throw new Error(`no chat request with ${marker}`);
  const messages = (request.body as { messages: { role: string; content: Part[] }[] }).messages;
  return messages[0]!.content;
}

test.serial(
  "analyze_image sends a file as an image_url data URL with the prompt, on the agent's provider, and answers its text",
  async (t) => {
    const { ctx, asked } = await context(t);
    await mkdir(join(ctx.workspace.root, "pics"));
    await writeFile(join(ctx.workspace.root, "pics", "chart.png"), PNG);
    fake.script.push({ kind: "reply", content: ["A bar", " chart."] });
    t.is(await analyze.run({ path: "pics/chart.png", prompt: "What kind of chart is this? (analyze-1)" }, ctx), "A bar chart.");
    t.deepEqual(partsOf("analyze-1"), [
      { type: "text", text: "What kind of chart is this? (analyze-1)" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } },
    ]);
    t.deepEqual(asked, [ctx.agentId]);
  },
);

test.serial("describe_image sends detail (high by default) and fetches a URL through the SSRF guard", async (t) => {
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
  let served = 0;
  const server = createServer((_req, res) => {
    served++;
    res.writeHead(200, { "content-type": "image/jpeg" }).end(jpeg);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/photo.jpg`;

  const refused = await context(t);
  const before = fake.chatRequests().length;
  await t.throwsAsync(describe.run({ path: url, detail: "high" }, refused.ctx), { instanceOf: PolicyBlock, message: /loopback/ });
  t.is(served, 0);
  t.is(fake.chatRequests().length, before, "nothing sent to the provider");

  const { ctx } = await context(t, { allowLoopback: true });
  fake.script.push({ kind: "reply", content: ["A photo."] });
  t.is(await describe.run({ path: url, detail: "low" }, ctx), "A photo.");
  const last = fake.chatRequests().at(-1)!;
  const parts = (last.body as { messages: { content: Part[] }[] }).messages[0]!.content;
  t.deepEqual(parts[1], { type: "image_url", image_url: { url: `data:image/jpeg;base64,${jpeg.toString("base64")}`, detail: "low" } });
  t.is(served, 1);

  await writeFile(join(ctx.workspace.root, "a.png"), PNG);
  fake.script.push({ kind: "reply", content: ["Described."] });
  await describe.run({ path: "a.png", detail: "high" }, ctx);
  t.is((fake.chatRequests().at(-1)!.body as { messages: { content: Part[] }[] }).messages[0]!.content[1]!.image_url!.detail, "high");
});

test.serial("the errors: outside the workspace, missing file, not an image, file: URL, no provider, a failing provider", async (t) => {
  const { ctx } = await context(t);
  await writeFile(join(ctx.workspace.root, "notes.txt"), "not an image");
  await t.throwsAsync(analyze.run({ path: "../../etc/passwd" }, ctx), { instanceOf: PolicyBlock, message: /outside the workspace/ });
  await t.throwsAsync(analyze.run({ path: "missing.png" }, ctx), { instanceOf: ToolError, message: "'missing.png' does not exist" });
  await t.throwsAsync(analyze.run({ path: "notes.txt" }, ctx), {
    instanceOf: ToolError,
    message: /not a PNG, JPEG, GIF, WebP or BMP image/,
  });
  await t.throwsAsync(analyze.run({ path: "file:///etc/passwd" }, ctx), { instanceOf: PolicyBlock, message: /only http and https/ });
  await t.throwsAsync(describe.run({ path: "x.png", detail: "medium" }, ctx), {
    instanceOf: ToolError,
    message: /detail must be low or high/,
  });
  await writeFile(join(ctx.workspace.root, "ok.png"), PNG);
  fake.script.push({ kind: "status", status: 400 });
  await t.throwsAsync(analyze.run({ path: "ok.png" }, ctx), { instanceOf: ToolError, message: /provider could not answer/ });
  delete ctx.services.chat;
  await t.throwsAsync(analyze.run({ path: "ok.png" }, ctx), { instanceOf: ToolError, message: /need the agent's provider/ });
});
