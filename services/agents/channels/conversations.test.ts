// The conversation router on its own (embedded PGlite with the conversation table, fake agents and
// a fake adapter): AllowFrom (others audited, never answered), an agent spawned per conversation
// with Channels:<Type>:Provider/Model and kept, a stopped agent replaced, turns of one conversation
// one at a time in order while other conversations go on, the reply sent with replyTo, and a failed
// turn answered with the apology.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import test from "ava";
import { testLogger } from "../../../test/support/test-logger.js";
import { until } from "../../../test/support/until.js";
import { type Database, openDatabase } from "../../runtime/database/index.js";
import type { AuditEntry } from "../audit/types.js";
import { AgentsChannelConversations0009 } from "../migrations/0009-channel-conversations.js";
import type { ChannelAdapter, InboundMessage } from "./channel-adapter.js";
import { ChannelEntity } from "./channel-table.js";
import { APOLOGY, type ConversationSettings, createConversationRouter } from "./conversations.js";

let db: Database;
let dataDir: string;
test.before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "conversations-"));
  db = await openDatabase({
    dataDir,
    modules: [
      {
        name: "agents",
        entities: [ChannelEntity],
        migrations: [{ name: "agents-0009-channel-conversations", class: AgentsChannelConversations0009 }],
      },
    ],
    logger: testLogger("conversations.test"),
  });
});
test.after.always(async () => {
  await db?.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface Deferred {
  resolve(reply: string): void;
  reject(error: Error): void;
}

/** A router over fakes; each turn waits until the test settles it (or answers `auto`). */
function harness(type: string, settings: ConversationSettings = {}, auto?: (agentId: string, message: string) => string) {
  const sent: { conversationId: string; content: string; replyTo?: string }[] = [];
  const audits: AuditEntry[] = [];
  const spawns: { provider?: string; model?: string }[] = [];
  const alive = new Set<string>();
  const turns: { agentId: string; message: string; settle: Deferred }[] = [];
  let next = 0;
  const adapter: ChannelAdapter = {
    type,
    displayName: type,
    connectedAtStart: true,
    missingSetting: () => undefined,
    async connect() {},
    async disconnect() {},
    async send(conversationId, content, replyTo) {
      sent.push({ conversationId, content, ...(replyTo !== undefined ? { replyTo } : {}) });
      return String(sent.length);
    },
  };
  const router = createConversationRouter({
    db,
    audit: {
      async record(_em, entry) {
        audits.push(entry);
      },
    },
    async spawn(input) {
      spawns.push(input);
      const id = `00000000-0000-4000-8000-${String(++next).padStart(12, "0")}`;
      alive.add(id);
      return { id };
    },
    agentExists: async (id) => alive.has(id),
    runTurn: (agentId, message) =>
      new Promise<string>((resolve, reject) => {
        if (!alive.has(agentId)) return reject(new ConnectError(`no agent ${agentId}`, Code.NotFound));
        if (auto) return resolve(auto(agentId, message));
        turns.push({ agentId, message, settle: { resolve, reject } });
      }),
    settings: (t) => (t === type ? settings : undefined),
    adapter: (t) => (t === type ? adapter : undefined),
    logger: testLogger("conversations.test"),
  });
  const message = (conversationId: string, text: string, senderId = "u1"): InboundMessage => ({
    channelType: type,
    conversationId,
    senderId,
    text,
    replyTo: `r-${text}`,
  });
  return { router, sent, audits, spawns, alive, turns, message };
}

test("turns of one conversation run one at a time in order; another conversation does not wait", async (t) => {
  const h = harness("queue");
  h.router.receive(h.message("a", "a1"));
  h.router.receive(h.message("a", "a2"));
  h.router.receive(h.message("b", "b1"));
  await until(() => h.turns.length === 2, "the first turn of each conversation");
  t.deepEqual(h.turns.map((x) => x.message).sort(), ["a1", "b1"], "a2 waits for a1");
  h.turns.find((x) => x.message === "b1")!.settle.resolve("reply b1");
  await until(() => h.sent.length === 1, "b's reply");
  t.is(h.turns.length, 2, "a2 still waits");
  h.turns.find((x) => x.message === "a1")!.settle.resolve("reply a1");
  await until(() => h.turns.length === 3, "a2's turn once a1 ended");
  t.is(h.turns[2]!.message, "a2");
  t.is(h.turns[2]!.agentId, h.turns.find((x) => x.message === "a1")!.agentId, "the conversation keeps its agent");
  h.turns[2]!.settle.resolve("reply a2");
  await h.router.drained();
  t.deepEqual(h.sent, [
    { conversationId: "b", content: "reply b1", replyTo: "r-b1" },
    { conversationId: "a", content: "reply a1", replyTo: "r-a1" },
    { conversationId: "a", content: "reply a2", replyTo: "r-a2" },
  ]);
  t.is(h.spawns.length, 2, "one agent per conversation");
});

test("an agent is spawned with Channels:<Type>:Provider/Model; a stopped one is replaced", async (t) => {
  const h = harness("spawning", { provider: "fake", model: "gpt-4o" }, (agentId, text) => `${agentId}:${text}`);
  h.router.receive(h.message("c", "one"));
  await h.router.drained();
  t.deepEqual(h.spawns, [{ provider: "fake", model: "gpt-4o" }]);
  const first = h.sent[0]!.content.split(":")[0]!;
  h.alive.delete(first);
  h.router.receive(h.message("c", "two"));
  await h.router.drained();
  t.is(h.spawns.length, 2);
  const second = h.sent[1]!.content.split(":")[0]!;
  t.not(second, first);
  h.router.receive(h.message("c", "three"));
  await h.router.drained();
  t.is(h.sent[2]!.content, `${second}:three`, "the replacement is kept");
  t.is(h.spawns.length, 2);
});

test("AllowFrom: listed senders pass, anyone else is ignored and audited; unset lets everyone in", async (t) => {
  const h = harness("guarded", { allowFrom: " 42 , 7" }, (_a, text) => `ok ${text}`);
  h.router.receive(h.message("d", "from 42", "42"));
  h.router.receive(h.message("d", "from 9", "9"));
  h.router.receive(h.message("d", "from 7", "7"));
  await h.router.drained();
  t.deepEqual(
    h.sent.map((s) => s.content),
    ["ok from 42", "ok from 7"],
  );
  t.is(h.audits.length, 1);
  t.like(h.audits[0], {
    action: "channel.message.denied",
    severity: "warning",
    resource: "guarded",
    detail: { senderId: "9", conversationId: "d" },
  });

  const open = harness("open", {}, (_a, text) => `ok ${text}`);
  open.router.receive(open.message("e", "anyone", "12345"));
  await open.router.drained();
  t.is(open.sent.length, 1);
  t.is(open.audits.length, 0);
});

test("a failed turn is answered with the apology, and the next message runs normally", async (t) => {
  const h = harness("failing");
  h.router.receive(h.message("f", "boom"));
  h.router.receive(h.message("f", "fine"));
  await until(() => h.turns.length === 1, "the first turn");
  h.turns[0]!.settle.reject(new Error("provider exploded at 10.0.0.5 with key sk-secret"));
  await until(() => h.turns.length === 2, "the second turn");
  h.turns[1]!.settle.resolve("all good");
  await h.router.drained();
  t.deepEqual(h.sent, [
    { conversationId: "f", content: APOLOGY, replyTo: "r-boom" },
    { conversationId: "f", content: "all good", replyTo: "r-fine" },
  ]);
});
