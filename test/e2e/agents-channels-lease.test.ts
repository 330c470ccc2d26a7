// Chat channels across instances and drains, with a loopback Telegram Bot API: while app-daemon
// drains the process, an update is received but neither answered nor confirmed (the next
// getUpdates offset does not pass it), and it is answered once the drain ends, or by the instance
// that starts after a restart (the channel's connected state survives it); a web SendMessage is
// refused meanwhile. On real PostgreSQL +
// NATS, two meshes on one database: one getUpdates long poll at a time across both, and when the
// holder stops the other takes the adapter over and answers the next message.
import { HttpTransportType, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import test, { type ExecutionContext } from "ava";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { channelsWiring } from "../../services/agents/channels/module-parts.js";
import { APOLOGY } from "../../services/agents/channels/conversations.js";
import { attachedGateway } from "../../services/daemon/gateway-link.js";
import { call, providerFlags } from "../support/agents-mesh.js";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.js";
import { realInfra, realServers } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { until } from "../support/until.js";

const PERSON = 111;

interface Fakes {
  telegram: FakeTelegram;
  openai: FakeOpenAi;
  dataDir: string;
  /** The database every mesh of the test shares (real PostgreSQL), dropped at the end. */
  databaseUrl?: string;
}

async function fakes(t: ExecutionContext): Promise<Fakes> {
  const telegram = await startFakeTelegram();
  const openai = await startFakeOpenAi();
  const dataDir = mkdtempSync(join(tmpdir(), "agents-channels-lease-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await telegram.close();
    await openai.close();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { telegram, openai, dataDir, databaseUrl: db?.url };
}

/** A mesh with Telegram configured; `meshDir` is its data directory (the embedded database lives there). */
async function meshWith(f: Fakes, meshDir: string): Promise<TestMesh> {
  return startTestMesh({
    dataDir: meshDir,
    databaseUrl: f.databaseUrl,
    flags: [
      ...providerFlags(f.openai, join(meshDir, "agents")),
      `--Channels:Telegram:BotToken=${f.telegram.token}`,
      `--Channels:Telegram:ApiBaseUrl=${f.telegram.url}`,
      "--Channels:Telegram:PollTimeoutSeconds=2",
    ],
  });
}

function dirIn(f: Fakes, name: string): string {
  const dir = join(f.dataDir, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function leaseHolder(mesh: TestMesh): Promise<string | undefined> {
  const rows = await mesh
    .db!.em()
    .getConnection()
    .execute<{ holder: string }[]>(
      `select "holder" from "agents_channel_lease" where "channel_type" = 'telegram' and "expires_at" > now()`,
    );
  return rows[0]?.holder;
}

async function repliesTo(telegram: FakeTelegram, chatId: number, count: number) {
  return until(() => {
    const sent = telegram.sent.filter((m) => String(m.chat_id) === String(chatId));
    return sent.length >= count && sent;
  }, `${count} Telegram message(s) to chat ${chatId}`);
}

/** The index of the first poll that answered `updateId`. */
async function receivedAt(telegram: FakeTelegram, updateId: number): Promise<number> {
  return until(() => {
    const i = telegram.polls.findIndex((p) => p.answered.includes(updateId));
    return i >= 0 ? i + 1 : 0;
  }, `a getUpdates answering update ${updateId}`).then((found) => found - 1);
}

function setDraining(draining: boolean): void {
  const gateway = attachedGateway();
  if (!gateway) throw new Error("no agent gateway attached to app-daemon's link");
  gateway.setDraining(draining);
}

test.serial("while draining, a Telegram update is received but not answered or confirmed; the drain's end answers it", async (t) => {
  const f = await fakes(t);
  const mesh = await meshWith(f, dirIn(f, "mesh"));
  t.teardown(() => mesh.close());
  t.teardown(() => attachedGateway()?.setDraining(false));
  const base = mesh.frontUrl("agents");
  t.is((await call(base, "POST", "/api/channels/telegram/connect")).status, 200);

  f.openai.script.push({ kind: "reply", content: ["before the drain"] });
  const first = f.telegram.push({ chatId: 700, fromId: PERSON, text: "hello" });
  await repliesTo(f.telegram, 700, 1);

  setDraining(true);
  const held = f.telegram.push({ chatId: 700, fromId: PERSON, text: "during the drain" });
  const at = await receivedAt(f.telegram, held);
  t.is(f.telegram.polls[at]!.offset, first + 1, "that poll confirmed the first update only");
  t.is(f.telegram.sent.filter((m) => String(m.chat_id) === "700").length, 1, "nothing answered the held update");

  // The web channel has nothing to leave unconfirmed: its SendMessage is refused like any new turn.
  const web = new HubConnectionBuilder()
    .withUrl(`${base}/hubs/agent`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  await web.start();
  t.teardown(() => web.stop());
  await t.throwsAsync(web.invoke("SendMessage", "web-conv", "during the drain"), { message: /Service Unavailable/ });

  f.openai.script.push({ kind: "reply", content: ["after the drain"] });
  setDraining(false);
  const sent = await repliesTo(f.telegram, 700, 2);
  t.is(sent[1]!.text, "after the drain", "the held update ran its turn: no apology");
  t.false(
    sent.some((m) => m.text === APOLOGY),
    "no apology",
  );
  const next = f.telegram.polls[at + 1]!;
  t.is(next.offset, held, "the next getUpdates did not pass the held update");
  t.true(next.answered.includes(held), "Telegram delivered it again");
  t.is(sent.length, 2, "answered once");
});

test.serial(
  "an update held by a drain is answered by the instance started after the restart; the connected state survives it",
  async (t) => {
    const f = await fakes(t);
    const meshDir = dirIn(f, "mesh");
    const first = await meshWith(f, meshDir);
    t.teardown(() => attachedGateway()?.setDraining(false));
    let firstClosed = false;
    t.teardown(() => (firstClosed ? undefined : first.close()));
    t.is((await call(first.frontUrl("agents"), "POST", "/api/channels/telegram/connect")).status, 200);
    await until(() => f.telegram.pollsStarted > 0, "the first getUpdates");

    setDraining(true);
    const held = f.telegram.push({ chatId: 701, fromId: PERSON, text: "during the update" });
    const at = await receivedAt(f.telegram, held);
    await first.close();
    firstClosed = true;
    t.is(
      f.telegram.polls.slice(at + 1).filter((p) => p.offset !== undefined && p.offset > held).length,
      0,
      "no poll confirmed the held update",
    );
    t.is(f.telegram.sent.length, 0);

    f.openai.script.push({ kind: "reply", content: ["after the update"] });
    const second = await meshWith(f, meshDir);
    t.teardown(() => second.close());
    const listed = await call(second.frontUrl("agents"), "GET", "/api/channels");
    t.like(
      (listed.body as { channelType: string }[]).find((c) => c.channelType === "telegram"),
      { isConnected: true },
      "still connected after the restart",
    );
    const [reply] = await repliesTo(f.telegram, 701, 1);
    t.is(reply!.text, "after the update");
  },
);

if (realServers(test, "a Telegram adapter on two meshes sharing PostgreSQL and NATS", ["postgres", "nats"])) {
  test.serial(
    "two meshes on one PostgreSQL + NATS: one getUpdates poll at a time; the other mesh takes over when the holder stops",
    async (t) => {
      // Renewals every 200 ms: the takeover after a clean stop comes at the next one.
      channelsWiring.lease = { renewMs: 200 };
      t.teardown(() => {
        channelsWiring.lease = undefined;
      });
      const f = await fakes(t);
      const a = await meshWith(f, dirIn(f, "a"));
      let aClosed = false;
      t.teardown(() => (aClosed ? undefined : a.close()));
      const b = await meshWith(f, dirIn(f, "b"));
      t.teardown(() => b.close());

      t.deepEqual((await call(a.frontUrl("agents"), "POST", "/api/channels/telegram/connect")).body, {
        channelType: "telegram",
        isConnected: true,
      });
      const getMeBefore = f.telegram.getMeCalls;
      t.deepEqual(
        (await call(b.frontUrl("agents"), "POST", "/api/channels/telegram/connect")).body,
        { channelType: "telegram", isConnected: true },
        "B sees the channel connected; its connect checks the token",
      );
      t.true(f.telegram.getMeCalls > getMeBefore);

      f.openai.script.push({ kind: "reply", content: ["from whichever holds it"] });
      f.telegram.push({ chatId: 800, fromId: PERSON, text: "one" });
      const [one] = await repliesTo(f.telegram, 800, 1);
      t.is(one!.text, "from whichever holds it");
      // Several renewal rounds of both meshes pass while the holder keeps polling.
      const polled = f.telegram.pollsStarted;
      await until(() => f.telegram.pollsStarted >= polled + 3, "three more polls");
      t.is(f.telegram.maxActivePolls, 1, "never two getUpdates at once");
      // A connected it while the lease was free: A holds it.
      const holderBefore = await leaseHolder(b);
      t.truthy(holderBefore);

      await a.close();
      aClosed = true;
      const afterStop = f.telegram.pollsStarted;
      await until(() => f.telegram.pollsStarted > afterStop, "B polling");
      f.openai.script.push({ kind: "reply", content: ["from the mesh that took over"] });
      f.telegram.push({ chatId: 800, fromId: PERSON, text: "two" });
      const sent = await repliesTo(f.telegram, 800, 2);
      t.is(sent[1]!.text, "from the mesh that took over");
      const holderAfter = await leaseHolder(b);
      t.truthy(holderAfter);
      t.not(holderAfter, holderBefore, "B holds the lease now");
      t.is(f.telegram.maxActivePolls, 1, "still never two at once");
      const listed = await call(b.frontUrl("agents"), "GET", "/api/channels");
      t.like(
        (listed.body as { channelType: string }[]).find((c) => c.channelType === "telegram"),
        { isConnected: true },
      );
    },
  );
}
