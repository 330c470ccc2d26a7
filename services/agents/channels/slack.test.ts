// The Slack adapter against a loopback Slack (test/support/fake-slack.ts: the Web API and Socket
// Mode on 127.0.0.1) with a recording ChannelHost, no mesh. Each test has its own fake and adapter,
// so they run side by side; every wait is on a condition (until) or a promise, never a fixed sleep.
// The log is recorded too, to check no token ever reaches it.
import { Writable } from "node:stream";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { type FakeSlack, type FakeSlackOptions, startFakeSlack } from "../../../test/support/fake-slack.js";
import { until } from "../../../test/support/until.js";
import { type ChannelAdapter, type ChannelHost, ChannelPlatformError, type InboundMessage } from "./channel-adapter.js";
import { createSlackChannel, SLACK_MESSAGE_LIMIT, type SlackSettings } from "./slack.js";

interface Recorded {
  fake: FakeSlack;
  adapter: ChannelAdapter;
  received: InboundMessage[];
  changes: { connected: boolean; reason?: string }[];
  logs: string[];
  /** While `refusing`, host.receive refuses messages as while the gateway drains. */
  drain: { refusing: boolean };
}

async function setUp(t: ExecutionContext, overrides: Partial<SlackSettings> = {}, fakeOptions: FakeSlackOptions = {}): Promise<Recorded> {
  const fake = await startFakeSlack(fakeOptions);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const received: InboundMessage[] = [];
  const changes: { connected: boolean; reason?: string }[] = [];
  const drain = { refusing: false };
  const host: ChannelHost = {
    // While `drain.refusing`, messages are refused as while the gateway drains for an update.
    receive: (message) => !drain.refusing && received.push(message) > 0,
    accepting: async () => {},
    connectionChanged: (connected, reason) => changes.push(reason === undefined ? { connected } : { connected, reason }),
    logger: pino({ level: "trace" }, sink),
  };
  const adapter = createSlackChannel(
    { botToken: fake.botToken, appToken: fake.appToken, apiBaseUrl: fake.url, autoConnect: false, ...overrides },
    host,
  );
  t.teardown(async () => {
    await adapter.disconnect();
    await fake.close();
  });
  return { fake, adapter, received, changes, logs, drain };
}

/** Neither token (nor a recognisable piece of one) in `text`. */
function assertNoToken(t: ExecutionContext, fake: FakeSlack, text: string) {
  t.false(text.includes(fake.botToken), "no bot token");
  t.false(text.includes(fake.appToken), "no app token");
  t.false(text.includes("secret"), "no piece of a token");
}

const acks = (fake: FakeSlack, socket = 0) => fake.sockets[socket]!.received;

test("the adapter's shape: type, name, AutoConnect, and the settings it needs in order", async (t) => {
  const host: ChannelHost = { receive: () => true, accepting: async () => {}, connectionChanged() {}, logger: pino({ level: "silent" }) };
  const base = { apiBaseUrl: "https://slack.com/api" };
  const none = createSlackChannel(base, host);
  t.is(none.type, "slack");
  t.is(none.displayName, "Slack");
  t.false(none.connectedAtStart);
  t.is(none.missingSetting(), "Channels:Slack:BotToken");
  t.is(createSlackChannel({ ...base, botToken: "xoxb-1" }, host).missingSetting(), "Channels:Slack:AppToken");
  t.is(createSlackChannel({ ...base, appToken: "xapp-1" }, host).missingSetting(), "Channels:Slack:BotToken");
  const both = createSlackChannel({ ...base, botToken: "xoxb-1", appToken: "xapp-1", autoConnect: true }, host);
  t.is(both.missingSetting(), undefined);
  t.true(both.connectedAtStart);
});

test("connect: auth.test with the bot token, then apps.connections.open with the app token, and answers once the socket said hello", async (t) => {
  const { fake, adapter, changes } = await setUp(t);
  await adapter.connect();
  t.is(fake.authTests, 1);
  t.is(fake.opens, 1);
  t.is(fake.sockets.length, 1, "the socket was open before connect answered");
  t.true(fake.sockets[0]!.open);
  await adapter.connect();
  t.is(fake.opens, 1, "connect is idempotent");
  t.deepEqual(changes, [], "the registry records the connect itself; no connectionChanged");
});

test("two connects at once share one handshake and one socket", async (t) => {
  const { fake, adapter } = await setUp(t);
  await Promise.all([adapter.connect(), adapter.connect()]);
  t.is(fake.authTests, 1);
  t.is(fake.opens, 1);
  t.is(fake.sockets.filter((s) => s.open).length, 1);
});

test("a refused bot token is a ChannelPlatformError 'refused' that quotes no token, and opens no socket", async (t) => {
  const { fake, adapter, logs } = await setUp(t);
  fake.refuseBotToken = true;
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "refused");
  t.regex(error!.message, /auth\.test: invalid_auth/);
  assertNoToken(t, fake, error!.message);
  assertNoToken(t, fake, logs.join("\n"));
  t.is(fake.opens, 0);
  t.is(fake.sockets.length, 0);

  fake.refuseBotToken = false;
  await adapter.connect();
  t.is(fake.sockets.length, 1, "the next connect works");
});

test("a refused app token fails connect too (502 rather than a connected channel that hears nothing)", async (t) => {
  const { fake, adapter } = await setUp(t);
  fake.refuseAppToken = true;
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "refused");
  t.regex(error!.message, /apps\.connections\.open: invalid_auth/);
  assertNoToken(t, fake, error!.message);
  t.is(fake.authTests, 1);
  t.is(fake.sockets.length, 0);
});

test("the bot token where the app token belongs is refused by Slack's own words", async (t) => {
  const { fake, adapter } = await setUp(t, { appToken: "xoxb-1111-2222-FAKEBOTTOKENsecret" });
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.regex(error!.message, /not_allowed_token_type/);
  assertNoToken(t, fake, error!.message);
});

test("an unreachable Slack is a ChannelPlatformError 'unreachable'", async (t) => {
  const { fake, adapter } = await setUp(t);
  fake.setOutage(true);
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "unreachable");
  assertNoToken(t, fake, error!.message);
});

test("a message: acked at once with exactly { envelope_id }, then host.receive with channel, user, text and ts as replyTo", async (t) => {
  const { fake, adapter, received } = await setUp(t);
  await adapter.connect();
  const { envelopeId, ts } = fake.push({ channel: "C0100", user: "U0PERSON", text: "hi there" });
  await until(() => received.length === 1, "the message");
  t.deepEqual(received[0], { channelType: "slack", conversationId: "C0100", senderId: "U0PERSON", text: "hi there", replyTo: ts });
  await until(() => acks(fake).length === 1, "the ack");
  t.deepEqual(acks(fake), [{ envelope_id: envelopeId }]);

  // In a thread, the reply goes to the thread; Slack's escapes are undone for the agent.
  fake.push({ channel: "C0100", user: "U0PERSON", text: "a &lt;b&gt; &amp;amp; c", threadTs: "1699999999.000001" });
  await until(() => received.length === 2, "the thread message");
  t.is(received[1]!.replyTo, "1699999999.000001");
  t.is(received[1]!.text, "a <b> &amp; c");
});

test("bot, own, non-text, subtype and redelivered messages are acked but not received", async (t) => {
  const { fake, adapter, received } = await setUp(t);
  await adapter.connect();
  const first = fake.push({ channel: "C0200", user: "U0PERSON", text: "first" });
  fake.push({ channel: "C0200", user: "U0OTHERBOT", text: "from a bot", botId: "B0OTHER" });
  fake.push({ channel: "C0200", user: fake.botUserId, text: "my own echo" });
  fake.push({ channel: "C0200", user: "U0PERSON" });
  fake.push({ channel: "C0200", user: "U0PERSON", text: "", subtype: "channel_join" });
  fake.push({ channel: "C0200", user: "U0PERSON", text: "edited", subtype: "message_changed" });
  fake.push({ channel: "C0200", user: "U0PERSON", text: "first", ts: first.ts });
  fake.push({ channel: "C0200", user: "U0PERSON", text: "marker" });
  await until(() => received.some((m) => m.text === "marker"), "the marker");
  t.deepEqual(
    received.map((m) => m.text),
    ["first", "marker"],
  );
  await until(() => acks(fake).length === 8, "every envelope acked");
  t.deepEqual(
    acks(fake),
    fake.sockets[0]!.envelopes.map((envelope_id) => ({ envelope_id })),
  );
});

test("a message refused while draining is not acked (Slack sends it again) and is received when it comes again", async (t) => {
  const { fake, adapter, received, drain } = await setUp(t);
  await adapter.connect();
  drain.refusing = true;
  const held = fake.push({ channel: "C0300", user: "U0PERSON", text: "during the drain" });
  // A bot's message after it is acked: once its ack is in, the held envelope has been handled too.
  const bot = fake.push({ channel: "C0300", user: "U0OTHERBOT", text: "from a bot", botId: "B0OTHER" });
  await until(() => acks(fake).length === 1, "the bot message's ack");
  t.deepEqual(acks(fake), [{ envelope_id: bot.envelopeId }], "the held envelope is not acked");
  t.deepEqual(received, []);

  drain.refusing = false;
  const again = fake.push({ channel: "C0300", user: "U0PERSON", text: "during the drain", ts: held.ts });
  await until(() => received.length === 1, "the message delivered again");
  t.like(received[0], { conversationId: "C0300", text: "during the drain", replyTo: held.ts });
  await until(() => acks(fake).length === 2, "its ack");
  t.deepEqual(acks(fake)[1], { envelope_id: again.envelopeId });
});

test("malformed frames are ignored: the socket and the adapter go on", async (t) => {
  const { fake, adapter, received, changes } = await setUp(t);
  await adapter.connect();
  for (const frame of [
    "null",
    "42",
    '"text"',
    "not json",
    "[]",
    '{"type":"events_api"}',
    '{"type":"events_api","payload":{"event":null}}',
  ]) {
    fake.sendRaw(frame);
  }
  fake.push({ channel: "C0250", user: "U0PERSON", text: "still here" });
  await until(() => received.length === 1, "the message after the malformed frames");
  t.is(received[0]!.text, "still here");
  t.true(fake.sockets[0]!.open);
  t.deepEqual(changes, []);
});

test("send: chat.postMessage with the bot token, split at 4000 in order with nothing added, every part in the thread", async (t) => {
  const { fake, adapter } = await setUp(t);
  await adapter.connect();
  const words: string[] = [];
  for (let i = 0; words.join(" ").length < 9000; i++) words.push(`word${i}`);
  const long = words.join(" ");
  const id = await adapter.send("C0300", long, "1700000000.000009");
  t.is(fake.posted.length, 3);
  for (const part of fake.posted) {
    t.true(part.text.length <= SLACK_MESSAGE_LIMIT);
    t.is(part.channel, "C0300");
    t.is(part.thread_ts, "1700000000.000009");
  }
  t.is(fake.posted.map((p) => p.text).join(""), long);
  t.true(fake.posted[0]!.text.endsWith(" "), "the cut falls after a space");
  t.is(id, fake.posted[2]!.ts, "answers the last part's ts");

  await adapter.send("D0400", "a < b && c > d");
  t.deepEqual(
    fake.posted[3],
    { channel: "D0400", text: "a &lt; b &amp;&amp; c &gt; d", ts: fake.posted[3]!.ts },
    "no thread_ts without replyTo",
  );
});

test("send: a 429 is waited out for its Retry-After and the message then posted", async (t) => {
  const { fake, adapter, logs } = await setUp(t);
  await adapter.connect();
  fake.rateLimitNextPost(1);
  const id = await adapter.send("C0500", "after the wait", "1700000000.000001");
  t.deepEqual(fake.rateLimited, [1]);
  t.is(fake.posted.length, 1);
  t.is(fake.posted[0]!.text, "after the wait");
  t.is(id, fake.posted[0]!.ts);
  t.true(logs.some((line) => line.includes("429") && line.includes('"retryAfterSeconds":1')));
});

test("send: a refused token is a ChannelPlatformError without the token", async (t) => {
  const { fake, adapter } = await setUp(t);
  await adapter.connect();
  fake.refuseBotToken = true;
  const error = await t.throwsAsync(adapter.send("C0600", "hello"), { instanceOf: ChannelPlatformError });
  t.regex(error!.message, /chat\.postMessage: invalid_auth/);
  assertNoToken(t, fake, error!.message);
});

test("a lost socket: connectionChanged(false), a new connection, connectionChanged(true), and messages flow again", async (t) => {
  const { fake, adapter, received, changes, logs } = await setUp(t);
  await adapter.connect();
  fake.dropSockets();
  await until(() => changes.length >= 1, "the loss");
  t.false(changes[0]!.connected);
  t.truthy(changes[0]!.reason, "with a reason");
  await until(() => changes.length >= 2, "the recovery");
  t.deepEqual(changes[1], { connected: true });
  t.is(fake.opens, 2, "a new connection via apps.connections.open");
  t.is(fake.authTests, 1, "reconnecting needs no new auth.test");
  await until(() => fake.sockets[1]?.open, "the second socket");

  const { envelopeId } = fake.push({ channel: "C0700", user: "U0PERSON", text: "after the loss" });
  await until(() => received.length === 1, "the message on the new socket");
  t.is(received[0]!.text, "after the loss");
  await until(() => acks(fake, 1).length === 1, "the ack on the new socket");
  t.deepEqual(acks(fake, 1), [{ envelope_id: envelopeId }]);
  assertNoToken(t, fake, logs.join("\n"));
  t.false(logs.join("\n").includes("ticket="), "the socket URL's ticket is not logged");
});

test("an outage: one connectionChanged(false) while reconnects fail, connectionChanged(true) once Slack is back", async (t) => {
  const { fake, adapter, changes } = await setUp(t);
  await adapter.connect();
  fake.setOutage(true);
  await until(() => changes.length >= 1, "the loss");
  await until(() => fake.cutByOutage >= 1, "a reconnect refused by the outage");
  fake.setOutage(false);
  await until(() => changes.length >= 2, "the recovery");
  t.deepEqual(
    changes.map((c) => c.connected),
    [false, true],
  );
  t.is(fake.opens, 2, "one failed attempt (no URL), then one answered");
  t.true(fake.sockets.at(-1)!.open);
});

test("Slack's disconnect: a new connection first, then the old one closed by the client; no loss reported", async (t) => {
  const { fake, adapter, received, changes } = await setUp(t);
  await adapter.connect();
  fake.requestDisconnect("refresh_requested");
  await until(() => fake.sockets.length === 2 && fake.sockets[1]!.open && !fake.sockets[0]!.open, "the new socket and the old one closed");
  t.is(fake.opens, 2);
  t.is(fake.sockets[0]!.closedBy, "client");
  t.is(fake.sockets[0]!.closeCode, 1000);
  t.deepEqual(fake.timeline, ["open 1", "open 2", "close 1 client"], "the new socket was up before the old one closed");
  fake.push({ channel: "C0800", user: "U0PERSON", text: "on the new socket" });
  await until(() => received.length === 1, "the message");
  t.deepEqual(changes, []);
});

test("a socket that stops answering pings is dropped as lost and replaced", async (t) => {
  const { fake, adapter, changes } = await setUp(t, { pingIntervalMs: 50 }, { answerPings: false });
  await adapter.connect();
  await until(() => changes.length >= 1, "the loss");
  t.deepEqual(changes[0], { connected: false, reason: "the socket answered no ping" });
  await until(() => fake.opens >= 2, "a new connection");
});

test("disconnect closes the socket (normal closure) and ends the loop: no reconnect after", async (t) => {
  const { fake, adapter, changes } = await setUp(t);
  await adapter.connect();
  await adapter.disconnect();
  t.false(fake.sockets[0]!.open, "closed before disconnect answered");
  t.is(fake.sockets[0]!.closedBy, "client");
  t.is(fake.sockets[0]!.closeCode, 1000);
  t.deepEqual(changes, [], "a disconnect here is not a platform-side loss");
  await adapter.disconnect();

  // Disconnect during the reconnect wait: it answers once the loop ended, and nothing opens after.
  await adapter.connect();
  t.is(fake.opens, 2);
  fake.setOutage(true);
  await until(() => changes.length === 1, "the loss");
  await adapter.disconnect();
  fake.setOutage(false);
  const opens = fake.opens;
  // A fresh connect is the only thing that opens a socket now: exactly one more.
  await adapter.connect();
  t.is(fake.opens, opens + 1);
  t.is(fake.sockets.filter((s) => s.open).length, 1);
});
