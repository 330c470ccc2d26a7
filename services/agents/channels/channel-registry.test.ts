// The channel registry with adapters other than web, as issue 16's will be: a channel that starts
// disconnected, one whose adapter fails to open (503, audited as an error, state unchanged), an
// adapter registered after start, state reopened at start, and adapters closed at stop.
import test from "ava";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { until } from "../../../test/support/until.js";
import { createUnitOfWork } from "../../runtime/outbox/index.js";
import { createAuditRing } from "../audit/audit-ring.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { type ChannelRegistry, createChannelRegistry } from "./channel-registry.js";

class FakeAdapter implements ChannelAdapter {
  opened = 0;
  closed = 0;
  sent: [string, string][] = [];
  failNextConnect = false;
  constructor(
    readonly type: string,
    readonly displayName: string,
    readonly connectedAtStart = false,
  ) {}
  missing: string | undefined;
  missingSetting() {
    return this.missing;
  }
  async connect() {
    if (this.failNextConnect) {
      this.failNextConnect = false;
      throw new Error("gateway handshake refused");
    }
    this.opened++;
  }
  async disconnect() {
    this.closed++;
  }
  async send(conversationId: string, content: string) {
    this.sent.push([conversationId, content]);
    return `msg-${this.sent.length}`;
  }
}

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh();
});
test.after.always(() => mesh?.close());

const ring = createAuditRing({ capacity: 100 });
const warned: string[] = [];
const silent = { warn: (obj: object) => void warned.push(JSON.stringify(obj)) };
function registryOn(on: TestMesh): ChannelRegistry {
  return createChannelRegistry({ db: on.db!, uow: createUnitOfWork({ db: on.db!, outbox: { notify() {} } }), audit: ring, logger: silent });
}

test.serial(
  "an adapter starts in its connectedAtStart state, connects, sends, and fails to open with 503 and an error entry",
  async (t) => {
    const registry = registryOn(mesh);
    const chat = new FakeAdapter("chatty", "Chatty");
    await registry.register(chat);
    await registry.start();
    t.deepEqual(await registry.list(), [{ channelType: "chatty", displayName: "Chatty", isConnected: false, configured: true }]);
    t.is(chat.opened, 0, "a disconnected channel is not opened at start");

    await t.throwsAsync(registry.send("chatty", "c1", "hi"), { message: /not connected/ });
    chat.failNextConnect = true;
    const failed = await t.throwsAsync(registry.connect("chatty"));
    t.regex(failed!.message, /'chatty' could not connect/);
    t.notRegex(failed!.message, /handshake/, "the adapter's own words stay in the log");
    t.is((failed as { code?: number }).code, 14, "Unavailable (503)");
    t.false((await registry.list())[0]!.isConnected);
    t.true(
      warned.some((w) => w.includes("gateway handshake refused")),
      "the adapter's error is logged",
    );
    const [entry] = (await ring.query(mesh.db!.em(), { resource: "chatty" }, 1, 0)).events;
    t.like(entry, { action: "channel.connect", severity: "error", detail: { changed: false, isConnected: false, failed: true } });

    t.deepEqual(await registry.connect("Chatty"), { channelType: "chatty", isConnected: true });
    t.is(chat.opened, 1);
    t.deepEqual(await registry.send("chatty", "c1", "hi"), { channelType: "chatty", conversationId: "c1", messageId: "msg-1" });
    t.deepEqual(chat.sent, [["c1", "hi"]]);
    t.deepEqual(await registry.disconnect("chatty"), { channelType: "chatty", isConnected: false });
    t.is(chat.closed, 1);
  },
);

test.serial(
  "registering after start makes the state row; a restart reopens what the database says is connected; stop closes",
  async (t) => {
    const first = registryOn(mesh);
    await first.start();
    const late = new FakeAdapter("latecomer", "Late", true);
    await first.register(late);
    t.deepEqual(await first.list(), [{ channelType: "latecomer", displayName: "Late", isConnected: true, configured: true }]);
    t.is(late.opened, 1, "connected at start: opened on registration");
    await t.throwsAsync(first.register(new FakeAdapter("latecomer", "Again")), { message: /already registered/ });
    await t.throwsAsync(first.register(new FakeAdapter("Bad Name", "Bad")), { message: /lower-case/ });

    // Another instance (or this one restarted) with the same adapter type: opened because the database says connected.
    const second = registryOn(mesh);
    const again = new FakeAdapter("latecomer", "Late", false);
    await second.register(again);
    await second.start();
    t.is(again.opened, 1);
    t.true((await second.list())[0]!.isConnected, "the database's state wins over connectedAtStart");
    await second.stop();
    t.is(again.closed, 1);
    t.true((await first.list())[0]!.isConnected, "stopping an instance leaves the shared state");
  },
);

test.serial("a registry following the bus opens and closes its adapter when another instance changes the state", async (t) => {
  const changer = registryOn(mesh);
  const here = new FakeAdapter("relayed", "Relayed");
  await changer.register(here);
  await changer.start();
  const follower = registryOn(mesh);
  const there = new FakeAdapter("relayed", "Relayed");
  await follower.register(there);
  await follower.start();
  const following = await follower.follow(mesh.bus!, "AGENTS");
  t.teardown(() => following.stop());
  t.is(there.opened, 0);

  await changer.connect("relayed");
  await mesh.drainOutbox();
  await until(() => there.opened === 1, "the follower's adapter opened");
  await changer.disconnect("relayed");
  await mesh.drainOutbox();
  await until(() => there.closed === 1, "the follower's adapter closed");
  t.is(there.opened, 1);
});
