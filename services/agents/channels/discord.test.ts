// The Discord adapter against a loopback Discord (test/support/fake-discord.ts: REST and the
// Gateway's WebSocket protocol) with a recording ChannelHost, no mesh: the handshake (gateway/bot,
// Identify, READY, heartbeats), refusals as ChannelPlatformError without the token, inbound
// messages (and the ones ignored), replies split at 2000 referencing the inbound message, a 429
// waited out, and the protocol's recovery rules judged by the frames the fake received: resume
// after a lost connection (with the dispatches missed meanwhile replayed), a withheld heartbeat ACK
// (zombied connection), op 7 (resume, no loss reported), op 9 (identify afresh); and disconnect.
// Waits are on conditions (until), never on time.
import { createServer } from "node:net";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { type FakeDiscord, type GatewayFrame, startFakeDiscord } from "../../../test/support/fake-discord.js";
import { until } from "../../../test/support/until.js";
import type { ChannelAdapter, ChannelHost, InboundMessage } from "./channel-adapter.js";
import { ChannelPlatformError } from "./channel-adapter.js";
import { createDiscordChannel, DISCORD_DRAINING_NOTICE, DISCORD_INTENTS, discordReconnectDelay } from "./discord.js";

interface Recorder {
  host: ChannelHost;
  received: InboundMessage[];
  changes: { connected: boolean; reason?: string }[];
  /** Everything the adapter logged, as JSON lines. */
  log: string[];
  /** While `refusing`, host.receive refuses messages as while the gateway drains. */
  drain: { refusing: boolean };
}

function recorder(): Recorder {
  const received: InboundMessage[] = [];
  const changes: Recorder["changes"] = [];
  const log: string[] = [];
  const drain = { refusing: false };
  const logger = pino({ level: "trace" }, { write: (line: string) => void log.push(line) });
  return {
    host: {
      receive: (message) => !drain.refusing && received.push(message) > 0,
      accepting: async () => {},
      connectionChanged: (connected, reason) => void changes.push({ connected, reason }),
      logger,
    },
    received,
    changes,
    log,
    drain,
  };
}

async function setup(t: ExecutionContext, heartbeatIntervalMs = 200) {
  const fake = await startFakeDiscord({ heartbeatIntervalMs });
  const rec = recorder();
  const adapter = createDiscordChannel({ botToken: fake.token, apiBaseUrl: fake.apiBaseUrl, reconnectFirstMs: 20 }, rec.host);
  t.teardown(async () => {
    await adapter.disconnect();
    await fake.close();
  });
  return { fake, rec, adapter };
}

const ops = (frames: GatewayFrame[]) => frames.map((f) => f.op);
const heartbeats = (frames: GatewayFrame[]) => frames.filter((f) => f.op === 1);

/** Waits for the adapter to have handled everything the fake sent so far: a message pushed now arrives. */
async function settled(fake: FakeDiscord, rec: Recorder): Promise<void> {
  const marker = `marker ${fake.sent.length}-${rec.received.length}-${Math.random()}`;
  fake.push({ channelId: "300", authorId: "900", content: marker });
  await until(() => rec.received.some((m) => m.text === marker), "the marker message");
}

test("settings: type, name, the missing token named, AutoConnect as the start state", (t) => {
  const rec = recorder();
  const unconfigured = createDiscordChannel({ apiBaseUrl: "https://discord.com/api/v10" }, rec.host);
  t.is(unconfigured.type, "discord");
  t.is(unconfigured.displayName, "Discord");
  t.false(unconfigured.connectedAtStart);
  t.is(unconfigured.missingSetting(), "Channels:Discord:BotToken");
  const configured = createDiscordChannel({ apiBaseUrl: "https://discord.com/api/v10", botToken: "x", autoConnect: true }, rec.host);
  t.is(configured.missingSetting(), undefined);
  t.true(configured.connectedAtStart);
});

test("reconnect waits 1 s doubling to 60 s", (t) => {
  t.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7, 40].map((n) => discordReconnectDelay(n)),
    [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000],
  );
});

test("connect: gateway/bot, then Identify with the intents, READY; heartbeats carry the last sequence; idempotent", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  t.is(fake.gatewayBotCalls, 1);
  t.is(fake.connections.length, 1);
  const [connection] = fake.connections;
  t.is(connection!.path, "/gateway");
  t.deepEqual(connection!.query, { v: "10", encoding: "json" });
  const identify = connection!.frames.find((f) => f.op === 2);
  const d = identify?.d as { token: string; intents: number; properties: Record<string, string> };
  t.is(d.token, fake.token);
  t.is(d.intents, (1 << 9) | (1 << 12) | (1 << 15));
  t.is(d.intents, DISCORD_INTENTS);
  t.deepEqual(Object.keys(d.properties).sort(), ["browser", "device", "os"]);
  t.truthy(connection!.sessionId, "connect answered after READY");

  // READY was s 1: the heartbeats say so (and a MESSAGE_CREATE moves it on); a first heartbeat
  // jittered to before READY says null.
  await until(() => heartbeats(connection!.frames).some((f) => f.d === 1), "a heartbeat after READY");
  await settled(fake, rec);
  await until(() => heartbeats(connection!.frames).some((f) => f.d === 2), "a heartbeat after the message");
  t.deepEqual(
    [...new Set(heartbeats(connection!.frames).map((f) => f.d))].filter((d) => d !== null),
    [1, 2],
  );

  await adapter.connect();
  t.is(fake.connections.length, 1, "a second connect opens nothing");
  t.deepEqual(rec.changes, []);
});

test("a refused token is a ChannelPlatformError 'refused' that never quotes the token", async (t) => {
  const { fake, rec, adapter } = await setup(t);
  fake.refuseToken = true;
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "refused");
  t.regex(error!.message, /401/);
  t.false(error!.message.includes(fake.token));
  t.is(fake.connections.length, 0, "no gateway connection without gateway/bot");
  t.false(rec.log.join("").includes(fake.token));
});

test("the gateway refusing Identify (4004) is 'refused' too, without the token", async (t) => {
  const { fake, adapter } = await setup(t);
  fake.refuseIdentify = true;
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "refused");
  t.regex(error!.message, /4004/);
  t.false(error!.message.includes(fake.token));
});

test("an unreachable Discord is a ChannelPlatformError 'unreachable'", async (t) => {
  // A port nothing listens on.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const rec = recorder();
  const token = "MTA-unreachable-token-secret";
  const adapter = createDiscordChannel({ botToken: token, apiBaseUrl: `http://127.0.0.1:${port}/api/v10` }, rec.host);
  const error = await t.throwsAsync(adapter.connect(), { instanceOf: ChannelPlatformError });
  t.is((error as ChannelPlatformError).kind, "unreachable");
  t.false(error!.message.includes(token));
});

test("a message from a person reaches host.receive; bot, webhook, own, non-text and system messages are ignored", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.push({ channelId: "500", authorId: "77", content: "from a bot", bot: true });
  fake.push({ channelId: "500", authorId: "78", content: "from a webhook", webhookId: "555" });
  fake.push({ channelId: "500", authorId: fake.botId, content: "my own" });
  fake.push({ channelId: "500", authorId: "77", content: "" });
  fake.push({ channelId: "500", authorId: "77", content: "joined", type: 7 });
  const reply = fake.push({ channelId: "500", authorId: "77", content: "a reply", type: 19 });
  const id = fake.push({ channelId: "501", authorId: "76", content: "hello bot" });
  await until(() => rec.received.length >= 2, "the two messages");
  await settled(fake, rec);
  t.deepEqual(rec.received.slice(0, 2), [
    { channelType: "discord", conversationId: "500", senderId: "77", text: "a reply", replyTo: reply },
    { channelType: "discord", conversationId: "501", senderId: "76", text: "hello bot", replyTo: id },
  ]);
  t.is(rec.received.length, 3, "only the two and the marker");
});

test("a message refused while draining (no gateway acknowledgement to withhold) is answered with a notice to send it again", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  rec.drain.refusing = true;
  const id = fake.push({ channelId: "502", authorId: "77", content: "during the drain" });
  await until(() => fake.sent.length === 1, "the notice");
  t.like(fake.sent[0], {
    channelId: "502",
    content: DISCORD_DRAINING_NOTICE,
    message_reference: { message_id: id, fail_if_not_exists: false },
  });
  t.deepEqual(rec.received, []);
});

test("send: split at 2000 in order with nothing added, the first part referencing the inbound message", async (t) => {
  const { fake, adapter } = await setup(t, 1000);
  await adapter.connect();
  const words = Array.from({ length: 900 }, (_, i) => `word${i}`).join(" ");
  t.true(words.length > 4000);
  const lastId = await adapter.send("600", words, "1200000000000000042");
  t.true(fake.sent.length >= 3);
  t.is(fake.sent.map((m) => m.content).join(""), words);
  t.true(fake.sent.every((m) => m.channelId === "600" && m.content.length <= 2000));
  t.deepEqual(fake.sent[0]!.message_reference, { message_id: "1200000000000000042", fail_if_not_exists: false });
  t.true(fake.sent.slice(1).every((m) => m.message_reference === undefined));
  t.deepEqual(fake.sent[0]!.allowed_mentions, { parse: [], replied_user: true });
  t.is(lastId, fake.sent.at(-1)!.id);

  await adapter.send("601", "short");
  t.is(fake.sent.at(-1)!.content, "short");
  t.is(fake.sent.at(-1)!.message_reference, undefined);
});

test("send: a conversation id that is not a channel id is the caller's mistake, sent nowhere", async (t) => {
  const { fake, adapter } = await setup(t, 1000);
  await adapter.connect();
  const error = await t.throwsAsync(adapter.send("../../users/@me", "hi"));
  t.false(error instanceof ChannelPlatformError);
  t.regex(error!.message, /channel id/);
  t.is(fake.sent.length, 0);
});

test("send: a 429 is waited out for its retry_after (body), then for Retry-After (header)", async (t) => {
  const { fake, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.rateLimitNextSend(0.3, "body");
  await adapter.send("700", "after a wait");
  fake.rateLimitNextSend(0.2, "header");
  await adapter.send("700", "after another");
  t.is(fake.rateLimited.length, 2);
  t.is(fake.earlyRetries, 0, "no retry came before retry_after had passed");
  t.deepEqual(
    fake.sent.map((m) => m.content),
    ["after a wait", "after another"],
  );
});

test("send: Discord refusing a message is a ChannelPlatformError with its words", async (t) => {
  const { fake, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.refuseToken = true;
  const error = await t.throwsAsync(adapter.send("800", "hi"), { instanceOf: ChannelPlatformError });
  t.regex(error!.message, /401: Unauthorized/);
  t.false(error!.message.includes(fake.token));
});

test("a lost connection: connectionChanged(false), Resume on resume_gateway_url with the session and seq, missed messages replayed, connectionChanged(true)", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  const sessionId = fake.connections[0]!.sessionId;
  fake.setOutage(true);
  await until(() => rec.changes.length >= 1, "the loss reported");
  t.false(rec.changes[0]!.connected);
  t.false(rec.changes[0]!.reason!.includes(fake.token));
  const missed = fake.push({ channelId: "900", authorId: "91", content: "while away" });
  const before = fake.connections.length;
  fake.setOutage(false);
  await until(() => rec.changes.length >= 2, "the recovery reported");
  t.deepEqual(
    rec.changes.map((c) => c.connected),
    [false, true],
  );
  await until(() => rec.received.some((m) => m.replyTo === missed), "the missed message replayed");

  const resumed = fake.connections.slice(before);
  t.is(resumed.length, 1);
  t.is(resumed[0]!.path, "/resume");
  t.deepEqual(resumed[0]!.query, { v: "10", encoding: "json" });
  t.deepEqual(resumed[0]!.frames[0], { op: 6, d: { token: fake.token, session_id: sessionId, seq: 1 } });
  t.false(ops(resumed[0]!.frames).includes(2), "no Identify on a resume");
  t.is(fake.gatewayBotCalls, 1, "a resume needs no gateway/bot");
  t.false(rec.log.join("").includes(fake.token));
});

test("a withheld heartbeat ACK: the connection is zombied, dropped and resumed", async (t) => {
  const { fake, rec, adapter } = await setup(t, 200);
  await adapter.connect();
  fake.withholdAcks(1);
  const index = await until(() => {
    const at = fake.connections.findIndex((c) => c.withheldAcks === 1);
    return at >= 0 && fake.connections[at + 1]?.sessionId !== undefined ? at + 1 : 0;
  }, "the withheld ACK and a resumed connection after it");
  const zombie = fake.connections[index - 1]!;
  const next = fake.connections[index]!;
  // Nothing after the unanswered heartbeat on that connection: it was dropped instead of beating again.
  t.is(zombie.frames.at(-1)!.op, 1);
  t.not(zombie.closeCode, 1000, "not a close that would end the session");
  t.is(next.path, "/resume");
  t.is(next.frames[0]!.op, 6);
  t.truthy(zombie.sessionId);
  t.deepEqual((next.frames[0]!.d as { session_id: string }).session_id, zombie.sessionId);
  await until(() => rec.changes.length >= 2, "loss and recovery");
  t.deepEqual(
    rec.changes.slice(0, 2).map((c) => c.connected),
    [false, true],
  );
  t.true(rec.changes.some((c) => /acknowledge a heartbeat/.test(c.reason ?? "")));
  await settled(fake, rec);
});

test("op 7 Reconnect: resumed at once, no loss reported", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.requestReconnect();
  await until(() => fake.connections.length === 2 && fake.connections[1]!.sessionId, "the resumed connection");
  await settled(fake, rec);
  t.deepEqual(rec.changes, []);
  t.is(fake.connections[0]!.closeCode, 4000);
  t.is(fake.connections[1]!.path, "/resume");
  t.deepEqual(ops(fake.connections[1]!.frames).slice(0, 1), [6]);
});

test("op 9 Invalid Session (false): a fresh Identify through gateway/bot", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.invalidateSession(false);
  await until(() => rec.changes.length >= 2, "loss and recovery");
  t.deepEqual(
    rec.changes.map((c) => c.connected),
    [false, true],
  );
  t.is(fake.connections.length, 2);
  t.is(fake.connections[1]!.path, "/gateway");
  t.deepEqual(ops(fake.connections[1]!.frames).slice(0, 1), [2]);
  t.not(fake.connections[1]!.sessionId, fake.connections[0]!.sessionId);
  t.is(fake.gatewayBotCalls, 2);
  await settled(fake, rec);
});

test("disconnect closes the socket (1000) and ends the loop: no further frames or connections", async (t) => {
  const { fake, adapter } = await setup(t, 1000);
  await adapter.connect();
  await until(() => heartbeats(fake.connections[0]!.frames).length >= 1, "a heartbeat");
  await adapter.disconnect();
  await until(() => fake.connections[0]!.closeCode !== undefined, "the fake to see the close");
  t.is(fake.connections[0]!.closeCode, 1000);
  const frames = fake.connections[0]!.frames.length;

  // A second adapter on the same fake is the clock: two of its heartbeats take longer than the
  // first adapter's heartbeat interval and its reconnect wait.
  const other = createDiscordChannel({ botToken: fake.token, apiBaseUrl: fake.apiBaseUrl, reconnectFirstMs: 20 }, recorder().host);
  t.teardown(() => other.disconnect());
  await other.connect();
  // Counted over all its connections: on a loaded machine it may have resumed on a new one.
  await until(() => fake.connections.slice(1).flatMap((c) => heartbeats(c.frames)).length >= 2, "two heartbeats of the other adapter");
  const mine = fake.connections.slice(1).find((c) => ops(c.frames).includes(2))!;
  t.is(fake.connections[0]!.frames.length, frames);
  // Anything new is the other adapter's (its session; a single Identify).
  const since = fake.connections.slice(1);
  // (A connection still opening has no session yet: under load the other adapter may be resuming.)
  t.true(since.every((c) => c.sessionId === undefined || c.sessionId === mine.sessionId));
  t.is(since.filter((c) => ops(c.frames).includes(2)).length, 1);
  await adapter.disconnect();
});

test("disconnect while reconnecting ends the loop", async (t) => {
  const { fake, rec, adapter } = await setup(t, 1000);
  await adapter.connect();
  fake.setOutage(true);
  await until(() => rec.changes.length >= 1, "the loss reported");
  await adapter.disconnect();
  const connections = fake.connections.length;
  const calls = fake.gatewayBotCalls;
  fake.setOutage(false);
  // As above, another adapter's heartbeats are the clock (longer than the reconnect waits so far).
  const other: ChannelAdapter = createDiscordChannel(
    { botToken: fake.token, apiBaseUrl: fake.apiBaseUrl, reconnectFirstMs: 20 },
    recorder().host,
  );
  t.teardown(() => other.disconnect());
  await other.connect();
  // Counted over all its connections: on a loaded machine it may have resumed on a new one.
  await until(
    () => fake.connections.slice(connections).flatMap((c) => heartbeats(c.frames)).length >= 2,
    "two heartbeats of the other adapter",
  );
  const mine = fake.connections.slice(connections).find((c) => ops(c.frames).includes(2))!;
  // Anything new is the other adapter's (its session; a single Identify), nothing the first one's.
  const since = fake.connections.slice(connections);
  // (A connection still opening has no session yet: under load the other adapter may be resuming.)
  t.true(since.every((c) => c.sessionId === undefined || c.sessionId === mine.sessionId));
  t.is(since.filter((c) => ops(c.frames).includes(2)).length, 1);
  t.is(fake.gatewayBotCalls, calls + 1);
  t.deepEqual(
    rec.changes.map((c) => c.connected),
    [false],
  );
});
