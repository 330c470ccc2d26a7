// Chat channels end to end on one mesh (agent front + fake OpenAI provider) with a loopback
// Telegram Bot API and a loopback signal-cli daemon: connect (502 on a refused token, never quoting
// it), a message → a turn of the conversation's agent → the reply sent back (history kept per
// conversation), getUpdates offsets, AllowFrom (others ignored and audited), bot / own / non-text
// messages ignored, a long reply split at 4096 in order, a 429's retry_after honoured, platform-side
// loss and recovery as channel.disconnected / channel.connected, the Signal core path (direct and
// group, Last-Event-ID on reconnect), the web channel on /hubs/agent (SendMessage, the reply and
// POST /api/channels/web/send pushed as ReceiveMessage to the connections in that conversation), and a failed turn answered with an apology (last: it leaves
// the provider waiting for a probe).
import { fromBinary } from "@bufbuild/protobuf";
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import test, { type ExecutionContext } from "ava";
import { ChannelConnectedSchema, ChannelDisconnectedSchema } from "../../gen/agents/v1/events_pb.js";
import { APOLOGY } from "../../services/agents/channels/conversations.js";
import { channelNotifier } from "../../services/daemon/gateway-link.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, providerFlags } from "../support/agents-mesh.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type FakeSignal, startFakeSignal } from "../support/fake-signal.js";
import { type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.js";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const ALLOWED = 111;
const OTHER_ALLOWED = 222;
const STRANGER = 999;

// One mesh for the whole file (each start costs seconds): its hooks own it, not a test's teardown.
let env: { mesh: TestMesh; fake: FakeOpenAi; base: string };
let dataDir: string;
let telegram: FakeTelegram;
let signal: FakeSignal;
let events: EventWatch<SeenEvent>;

test.before(async () => {
  telegram = await startFakeTelegram();
  signal = await startFakeSignal();
  const fake = await startFakeOpenAi();
  dataDir = mkdtempSync(join(tmpdir(), "agents-channels-"));
  const flags = [
    ...providerFlags(fake, dataDir),
    `--Channels:Telegram:BotToken=${telegram.token}`,
    `--Channels:Telegram:ApiBaseUrl=${telegram.url}`,
    "--Channels:Telegram:PollTimeoutSeconds=2",
    `--Channels:Telegram:AllowFrom=${ALLOWED}, ${OTHER_ALLOWED}`,
    `--Channels:Signal:BaseUrl=${signal.url}`,
    `--Channels:Signal:Account=${signal.account}`,
    "--AgentGateway:ProviderProbeSeconds=1",
  ];
  const mesh = await startTestMesh({ flags });
  env = { mesh, fake, base: mesh.frontUrl("agents") };
  events = await watchStream(env.mesh, "agents.v1.channel.>", "AGENTS");
});
test.after.always(async () => {
  await events?.stop();
  await env?.mesh.close();
  await env?.fake.close();
  await telegram?.close();
  await signal?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function decoded(event: SeenEvent): string {
  if (event.subject === "agents.v1.channel.connected") return `connected ${fromBinary(ChannelConnectedSchema, event.data).channelType}`;
  return `disconnected ${fromBinary(ChannelDisconnectedSchema, event.data).channelType}`;
}

/** The messages of the last chat request the provider got, as role: content. */
function lastPrompt(): string[] {
  const request = env.fake.chatRequests().at(-1);
  const body = request?.body as { messages: { role: string; content: string | null }[] } | undefined;
  return (body?.messages ?? []).map((m) => `${m.role}: ${m.content ?? ""}`);
}

async function sentTo(chatId: number, count: number) {
  return until(() => {
    const sent = telegram.sent.filter((m) => String(m.chat_id) === String(chatId));
    return sent.length >= count && sent;
  }, `${count} Telegram message(s) to chat ${chatId}`);
}

test.serial("GET /api/channels: telegram and signal configured, disconnected until connected", async (t) => {
  const res = await call(env.base, "GET", "/api/channels");
  t.is(res.status, 200);
  const byType = Object.fromEntries((res.body as { channelType: string }[]).map((c) => [c.channelType, c]));
  t.deepEqual(byType.telegram, { channelType: "telegram", displayName: "Telegram", isConnected: false, configured: true });
  t.deepEqual(byType.signal, { channelType: "signal", displayName: "Signal", isConnected: false, configured: true });
  t.deepEqual(byType.slack, { channelType: "slack", displayName: "Slack", isConnected: false, configured: false });
  t.is(telegram.polls.length, 0, "nothing polls a disconnected channel");
});

test.serial("Telegram: a refused token is 502 without the token; connect answers after getMe succeeded", async (t) => {
  telegram.refuseToken = true;
  const refused = await call(env.base, "POST", "/api/channels/telegram/connect");
  t.is(refused.status, 502);
  t.is(refused.body.error, "Bad Gateway");
  t.false(JSON.stringify(refused.body).includes(telegram.token));
  t.false(JSON.stringify(refused.body).includes("TEST-fake"));
  t.false(
    (await call(env.base, "GET", "/api/channels")).body.find((c: { channelType: string }) => c.channelType === "telegram").isConnected,
  );

  telegram.refuseToken = false;
  const before = telegram.getMeCalls;
  const ok = await call(env.base, "POST", "/api/channels/telegram/connect");
  t.is(ok.status, 200);
  t.deepEqual(ok.body, { channelType: "telegram", isConnected: true });
  t.true(telegram.getMeCalls > before, "getMe was called before the answer");
  await until(() => events.seen.map(decoded).includes("connected telegram"), "channel.connected for telegram");
  await until(() => telegram.pollsStarted > 0, "the first getUpdates");
});

test.serial("Telegram: a message runs a turn and the reply goes back to the chat; the conversation keeps its history", async (t) => {
  env.fake.script.push({ kind: "reply", content: ["Hello ", "from the agent"] });
  const first = telegram.push({ chatId: 500, fromId: ALLOWED, text: "hi there" });
  const [reply] = await sentTo(500, 1);
  t.is(reply!.text, "Hello from the agent");
  t.truthy(reply!.reply_parameters, "the reply references the message");
  t.deepEqual(lastPrompt().slice(-1), ["user: hi there"]);

  env.fake.script.push({ kind: "reply", content: ["second answer"] });
  const second = telegram.push({ chatId: 500, fromId: OTHER_ALLOWED, text: "and again" });
  const sent = await sentTo(500, 2);
  t.is(sent[1]!.text, "second answer");
  t.deepEqual(lastPrompt().slice(-3), ["user: hi there", "assistant: Hello from the agent", "user: and again"]);

  // Offsets: each poll after an update confirms it (offset = last handled update_id + 1); none is answered twice.
  await until(() => telegram.polls.some((p) => p.offset === second + 1), "a poll with offset past the second update");
  const answered = telegram.polls.flatMap((p) => p.answered);
  t.deepEqual(
    answered.filter((id) => id === first || id === second),
    [first, second],
  );
  for (const [i, poll] of telegram.polls.entries()) {
    const previous = telegram.polls.slice(0, i).flatMap((p) => p.answered);
    if (previous.length > 0) t.is(poll.offset, Math.max(...previous) + 1, `poll ${i}`);
  }
});

test.serial(
  "Updates:NotifyChannels: a notice reaches every conversation seen on a connected channel, none on a disconnected one",
  async (t) => {
    const notify = channelNotifier();
    t.truthy(notify, "the channels registered their notifier with app-daemon's link");
    const before = telegram.sent.filter((m) => String(m.chat_id) === "500").length;
    await notify!("Meshwork 9.9.9 is available");
    const sent = await sentTo(500, before + 1);
    t.is(sent.at(-1)!.text, "Meshwork 9.9.9 is available");
    t.false(
      signal.sent.some((m) => JSON.stringify(m).includes("9.9.9")),
      "signal is not connected: nothing sent there",
    );
  },
);

test.serial("Telegram: strangers (audited), bots, the bot itself and non-text messages get no turn", async (t) => {
  const chats = env.fake.chatRequests().length;
  telegram.push({ chatId: 501, fromId: STRANGER, text: "let me in" });
  telegram.push({ chatId: 501, fromId: ALLOWED, text: "from a bot", isBot: true });
  telegram.push({ chatId: 501, fromId: telegram.botId, text: "my own echo" });
  telegram.push({ chatId: 501, fromId: ALLOWED, sticker: true });
  env.fake.script.push({ kind: "reply", content: ["only this"] });
  telegram.push({ chatId: 501, fromId: ALLOWED, text: "marker" });
  const sent = await sentTo(501, 1);
  t.deepEqual(
    sent.map((m) => m.text),
    ["only this"],
  );
  t.is(env.fake.chatRequests().length, chats + 1, "one turn: the marker's");
  t.deepEqual(lastPrompt().slice(-1), ["user: marker"]);
  const audit = await call(env.base, "GET", "/api/audit/events?action=channel.message.denied");
  t.is(audit.status, 200);
  const denied = audit.body.events.find((e: { resource: string }) => e.resource === "telegram");
  t.truthy(denied);
  t.is(denied.detail.senderId, String(STRANGER));
  t.is(denied.detail.conversationId, "501");
});

test.serial("Telegram: a reply over 4096 characters is sent in parts, in order, nothing added or lost", async (t) => {
  const words: string[] = [];
  for (let i = 0; words.join(" ").length < 9000; i++) words.push(`word${i}`);
  const long = words.join(" ");
  env.fake.script.push({ kind: "reply", content: [long.slice(0, 5000), long.slice(5000)] });
  telegram.push({ chatId: 502, fromId: ALLOWED, text: "write a lot" });
  const sent = await sentTo(502, 3);
  t.is(sent.length, 3);
  for (const part of sent) t.true(part.text.length <= 4096);
  t.is(sent.map((m) => m.text).join(""), long);
  t.true(sent[0]!.text.endsWith(" "), "the cut falls after a space");
});

test.serial("Telegram: a 429 is waited out for retry_after seconds and the message then sent", async (t) => {
  telegram.rateLimitNextSend(1);
  env.fake.script.push({ kind: "reply", content: ["after the wait"] });
  telegram.push({ chatId: 503, fromId: ALLOWED, text: "busy?" });
  const [reply] = await sentTo(503, 1);
  t.is(reply!.text, "after the wait");
  t.is(telegram.rateLimited.length, 1);
  t.true(reply!.at - telegram.rateLimited[0]!.at >= 950, "sent no sooner than retry_after");
});

test.serial(
  "Telegram: a platform-side loss and recovery are channel.disconnected then channel.connected; the state stays connected",
  async (t) => {
    const seen = events.seen.length;
    telegram.setOutage(true);
    await until(() => events.seen.slice(seen).map(decoded).includes("disconnected telegram"), "channel.disconnected on the loss");
    const listed = (await call(env.base, "GET", "/api/channels")).body.find((c: { channelType: string }) => c.channelType === "telegram");
    t.true(listed.isConnected, "the stored state is what was asked for");
    telegram.setOutage(false);
    await until(
      () => events.seen.slice(seen).map(decoded).join(",") === "disconnected telegram,connected telegram",
      "channel.connected on recovery",
    );
    const audit = await call(env.base, "GET", "/api/audit/events?resource=telegram&action=channel.lost");
    t.is(audit.body.events.length >= 1, true);
    t.false(JSON.stringify(audit.body).includes(telegram.token));

    env.fake.script.push({ kind: "reply", content: ["back again"] });
    telegram.push({ chatId: 504, fromId: ALLOWED, text: "still there?" });
    t.is((await sentTo(504, 1))[0]!.text, "back again");
  },
);

test.serial("Signal: connect, a direct and a group message each get their reply; own and non-text messages none", async (t) => {
  const ok = await call(env.base, "POST", "/api/channels/signal/connect");
  t.is(ok.status, 200);
  t.deepEqual(ok.body, { channelType: "signal", isConnected: true });
  await until(() => signal.openStreams() === 1, "the event stream");

  signal.receive({ source: signal.account, text: "my own note" });
  signal.receive({ source: "+15551112222" });
  env.fake.script.push({ kind: "reply", content: ["hola"] });
  signal.receive({ source: "+15551112222", text: "hello signal" });
  await until(() => signal.sent.length >= 1, "a Signal send");
  t.deepEqual(signal.sent[0], { account: signal.account, recipient: ["+15551112222"], message: "hola" });
  t.deepEqual(lastPrompt().slice(-1), ["user: hello signal"]);

  env.fake.script.push({ kind: "reply", content: ["to the group"] });
  signal.receive({ source: "+15553334444", text: "group hello", groupId: "Z3JvdXAtaWQtb25lLXR3by10aHJlZQ==" });
  await until(() => signal.sent.length >= 2, "a Signal group send");
  t.deepEqual(signal.sent[1], { account: signal.account, groupId: "Z3JvdXAtaWQtb25lLXR3by10aHJlZQ==", message: "to the group" });
  t.is(signal.sent.length, 2, "nothing for the own and the typing message");
});

test.serial("Signal: a dropped stream is a loss; the reconnect sends Last-Event-ID and is a recovery", async (t) => {
  const seen = events.seen.length;
  const lastId = signal.receive({ source: "+15550009999" });
  const requests = signal.streamRequests.length;
  signal.dropStreams();
  await until(() => events.seen.slice(seen).map(decoded).includes("disconnected signal"), "channel.disconnected for signal");
  await until(
    () => events.seen.slice(seen).map(decoded).join(",") === "disconnected signal,connected signal",
    "channel.connected for signal",
  );
  t.is(signal.streamRequests.length, requests + 1);
  t.is(signal.streamRequests.at(-1), lastId);

  const sends = signal.sent.length;
  env.fake.script.push({ kind: "reply", content: ["reconnected"] });
  signal.receive({ source: "+15551112222", text: "you there?" });
  await until(() => signal.sent.length > sends, "a send after the reconnect");
  t.is(signal.sent.at(-1)!.message, "reconnected");
  t.deepEqual(lastPrompt().slice(-3), ["user: hello signal", "assistant: hola", "user: you there?"], "the conversation's history");
});

async function hub(t: ExecutionContext): Promise<{ connection: HubConnection; received: unknown[] }> {
  const connection = new HubConnectionBuilder()
    .withUrl(`${env.base}/hubs/agent`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  const received: unknown[] = [];
  connection.on("ReceiveMessage", (message: unknown) => received.push(message));
  await connection.start();
  t.teardown(() => connection.stop());
  return { connection, received };
}

test.serial(
  "web: SendMessage on /hubs/agent runs a turn; the reply and a REST send come back as ReceiveMessage to that conversation's connections",
  async (t) => {
    const alice = await hub(t);
    const bob = await hub(t);
    env.fake.script.push({ kind: "reply", content: ["web ", "reply"] });
    const accepted = await alice.connection.invoke("SendMessage", "web-conv-1", "hello web");
    t.deepEqual(accepted, { channelType: "web", conversationId: "web-conv-1" });
    await until(() => alice.received.length >= 1, "ReceiveMessage with the reply");
    t.deepEqual(alice.received[0], { channelType: "web", conversationId: "web-conv-1", content: "web reply" });
    t.deepEqual(lastPrompt().slice(-1), ["user: hello web"]);

    const sent = await call(env.base, "POST", "/api/channels/web/send", { conversationId: "web-conv-1", content: "an operator's note" });
    t.is(sent.status, 202);
    await until(() => alice.received.length >= 2, "ReceiveMessage with the REST send");
    t.deepEqual(alice.received[1], { channelType: "web", conversationId: "web-conv-1", content: "an operator's note" });

    env.fake.script.push({ kind: "reply", content: ["bob's own"] });
    await bob.connection.invoke("SendMessage", "web-conv-2", "bob here");
    await until(() => bob.received.length >= 1, "bob's reply");
    t.deepEqual(
      bob.received,
      [{ channelType: "web", conversationId: "web-conv-2", content: "bob's own" }],
      "nothing of a conversation bob never sent to",
    );
    t.deepEqual(lastPrompt(), ["user: bob here"], "a new conversation, a new agent");
    await t.throwsAsync(alice.connection.invoke("SendMessage", "web-conv-1", "  "), { message: /content/ });
  },
);

test.serial("a failed turn is answered with a short apology, never the error", async (t) => {
  env.fake.script.push({ kind: "status", status: 400 });
  telegram.push({ chatId: 505, fromId: ALLOWED, text: "this will fail" });
  const [reply] = await sentTo(505, 1);
  t.is(reply!.text, APOLOGY);
  t.false(/error|status|400|provider/i.test(reply!.text));
});
