// The channel registry with adapters other than web, as issue 16's will be: a channel that starts
// disconnected, one whose adapter fails to open (503, audited as an error, state unchanged), an
// adapter registered after start, state reopened at start, and adapters closed at stop; a missing
// setting (400 before the adapter is called, no state row until configured), a platform failure
// (502), and platform-side losses and recoveries (events only while the channel is connected).
// The leases: one registry (instance) at a time opens a platform adapter; a connect request on
// another only checks the credentials; a clean stop hands over at the next renewal, a holder that
// died once its lease ended, and a holder whose lease another instance took closes its adapter
// (reopened later, a loss it had reported is recorded as recovered).
import { fromBinary } from "@bufbuild/protobuf";
import { Code, type ConnectError } from "@connectrpc/connect";
import test, { type ExecutionContext } from "ava";
import { ChannelConnectedSchema, ChannelDisconnectedSchema } from "../../../gen/agents/v1/events_pb.js";
import { HttpErrorStatusSchema } from "../../../gen/meshwork/api/v1/options_pb.js";
import { watchStream } from "../../../test/support/event-watch.js";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { until } from "../../../test/support/until.js";
import { createUnitOfWork } from "../../runtime/outbox/index.js";
import { createAuditRing } from "../audit/audit-ring.js";
import { type ChannelAdapter, ChannelPlatformError } from "./channel-adapter.js";
import { createChannelLeases, type LeaseTimings } from "./channel-lease.js";
import { type ChannelRegistry, createChannelRegistry } from "./channel-registry.js";

class FakeAdapter implements ChannelAdapter {
  opened = 0;
  closed = 0;
  checked = 0;
  /** Open now (connected and not closed since). */
  isOpen = false;
  sent: [string, string][] = [];
  failNextConnect = false;
  failWith: Error | undefined;
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
    if (this.failWith) throw this.failWith;
    if (this.failNextConnect) {
      this.failNextConnect = false;
      throw new Error("gateway handshake refused");
    }
    this.opened++;
    this.isOpen = true;
  }
  async check() {
    if (this.failWith) throw this.failWith;
    this.checked++;
  }
  async disconnect() {
    if (this.isOpen) this.closed++;
    this.isOpen = false;
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
/** A registry (an instance) on the mesh's database, stopped at the end of the test unless it was already. */
function registryOn(on: TestMesh, t?: ExecutionContext, lease?: Partial<LeaseTimings>): ChannelRegistry {
  const registry = createChannelRegistry({
    db: on.db!,
    uow: createUnitOfWork({ db: on.db!, outbox: { notify() {} } }),
    audit: ring,
    logger: silent,
    lease,
  });
  t?.teardown(() => registry.stop({ keepLeases: true }));
  return registry;
}

async function leaseHolder(type: string): Promise<string | undefined> {
  const rows = await mesh
    .db!.em()
    .getConnection()
    .execute<{ holder: string }[]>(`select "holder" from "agents_channel_lease" where "channel_type" = ? and "expires_at" > now()`, [type]);
  return rows[0]?.holder;
}

test.serial(
  "an adapter starts in its connectedAtStart state, connects, sends, and fails to open with 503 and an error entry",
  async (t) => {
    const registry = registryOn(mesh, t);
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
    const first = registryOn(mesh, t);
    await first.start();
    const late = new FakeAdapter("latecomer", "Late", true);
    await first.register(late);
    t.deepEqual(await first.list(), [{ channelType: "latecomer", displayName: "Late", isConnected: true, configured: true }]);
    t.is(late.opened, 1, "connected at start: opened on registration");
    await t.throwsAsync(first.register(new FakeAdapter("latecomer", "Again")), { message: /already registered/ });
    await t.throwsAsync(first.register(new FakeAdapter("Bad Name", "Bad")), { message: /lower-case/ });

    await first.stop();
    t.is(late.closed, 1);
    t.is(await leaseHolder("latecomer"), undefined, "a clean stop releases the lease");

    // This instance restarted (or another one) with the same adapter type: opened because the database says connected.
    const second = registryOn(mesh, t);
    const again = new FakeAdapter("latecomer", "Late", false);
    await second.register(again);
    await second.start();
    t.is(again.opened, 1);
    t.is(await leaseHolder("latecomer"), second.instanceId);
    t.true((await second.list())[0]!.isConnected, "the database's state wins over connectedAtStart");
    await second.stop();
    t.is(again.closed, 1);
    t.true((await first.list())[0]!.isConnected, "stopping an instance leaves the shared state");
  },
);

test.serial("a registry following the bus opens and closes its adapter when another instance changes the state", async (t) => {
  // The changer's adapter is not configured there: it changes the state but never holds the lease.
  const changer = registryOn(mesh, t);
  const here = new FakeAdapter("relayed", "Relayed");
  here.missing = "Channels:Relayed:Token";
  await changer.register(here);
  await changer.start();
  const follower = registryOn(mesh, t);
  const there = new FakeAdapter("relayed", "Relayed");
  await follower.register(there);
  await follower.start();
  const following = await follower.follow(mesh.bus!, "AGENTS");
  t.teardown(() => following.stop());
  t.is(there.opened, 0);

  // Configured on the changer now: its connect takes the free lease, opens, and the follower's stays closed.
  here.missing = undefined;
  await changer.connect("relayed");
  t.is(here.opened, 1);
  await changer.stop();
  t.is(here.closed, 1);
  await mesh.drainOutbox();
  await until(() => there.opened === 1, "the follower's adapter opened (the changer released the lease)");
  t.is(await leaseHolder("relayed"), follower.instanceId);
  await changer.disconnect("relayed");
  await mesh.drainOutbox();
  // Closed first, then the lease given up.
  await until(
    async () => there.closed === 1 && (await leaseHolder("relayed")) === undefined,
    "the follower's adapter closed, its lease released",
  );
  t.is(there.opened, 1);
});

test.serial(
  "a missing setting is 400 naming it and no state row; configured later, AutoConnect applies; a platform failure is 502",
  async (t) => {
    const registry = registryOn(mesh, t);
    const bot = new FakeAdapter("botty", "Botty", true);
    bot.missing = "Channels:Botty:Token";
    await registry.register(bot);
    await registry.start();
    t.deepEqual(await registry.list(), [{ channelType: "botty", displayName: "Botty", isConnected: false, configured: false }]);
    const missing = await t.throwsAsync(registry.connect("botty"));
    t.is((missing as ConnectError).code, Code.InvalidArgument);
    t.regex(missing!.message, /Channels:Botty:Token/);
    t.is(bot.opened, 0, "the adapter is not called");
    const rows = await mesh.db!.em().getConnection().execute(`select * from "agents_channel" where "channel_type" = 'botty'`);
    t.is(rows.length, 0, "no state row while unconfigured");

    // The next start with the setting given: AutoConnect (connectedAtStart) makes it connected.
    const restarted = registryOn(mesh, t);
    const configured = new FakeAdapter("botty", "Botty", true);
    await restarted.register(configured);
    await restarted.start();
    t.is(configured.opened, 1);
    t.true((await restarted.list())[0]!.isConnected);
    await restarted.stop();

    const refusing = new FakeAdapter("refusing", "Refusing");
    refusing.failWith = new ChannelPlatformError("getMe at https://api.example/botSECRET/getMe: 401", "refused");
    await registry.register(refusing);
    const refused = (await t.throwsAsync(registry.connect("refusing"))) as ConnectError;
    t.is(refused.code, Code.Unavailable);
    t.is(refused.findDetails(HttpErrorStatusSchema)[0]?.status, 502);
    t.notRegex(refused.message, /SECRET/);
  },
);

test.serial("platform-side losses and recoveries publish channel events while connected, and nothing once disconnected", async (t) => {
  const watch = await watchStream(mesh, "agents.v1.channel.>", "AGENTS");
  t.teardown(() => watch.stop());
  const registry = registryOn(mesh, t);
  const flaky = new FakeAdapter("flaky", "Flaky", true);
  await registry.register(flaky);
  await registry.start();
  await registry.reportConnection("flaky", false, "poll failed");
  await registry.reportConnection("flaky", true);
  await registry.disconnect("flaky");
  await registry.reportConnection("flaky", false, "late report");
  await mesh.drainOutbox();
  const ours = () =>
    watch.seen
      .map((e) =>
        e.subject === "agents.v1.channel.connected"
          ? `connected ${fromBinary(ChannelConnectedSchema, e.data).channelType}`
          : `disconnected ${fromBinary(ChannelDisconnectedSchema, e.data).channelType}`,
      )
      .filter((e) => e.endsWith(" flaky"));
  await until(() => ours().length >= 3, "three flaky events");
  t.deepEqual(ours(), ["disconnected flaky", "connected flaky", "disconnected flaky"], "the loss, the recovery, the requested disconnect");
  t.true((await registry.list()).find((c) => c.channelType === "flaky")!.isConnected === false);
  const lost = (await ring.query(mesh.db!.em(), { resource: "flaky", action: "channel.lost" }, 10, 0)).events;
  t.is(lost.length, 1, "the late report after the disconnect is not recorded");
  t.like(lost[0], { severity: "warning", detail: { platformSide: true, reason: "poll failed" } });
});

test.serial("a lease is taken when free, renewed and released by its holder only, and taken over once it has ended", async (t) => {
  const x = createChannelLeases(mesh.db!, "instance-x", 60_000);
  const y = createChannelLeases(mesh.db!, "instance-y", 60_000);
  t.true(await x.acquire("leased"), "free: taken");
  t.false(await y.acquire("leased"), "held by another: not taken");
  t.true(await x.acquire("leased"), "renewed by its holder");
  t.is(await y.holder("leased"), "instance-x");
  await y.release("leased");
  t.is(await y.holder("leased"), "instance-x", "another instance cannot release it");
  await x.release("leased");
  t.is(await x.holder("leased"), undefined);
  t.true(await y.acquire("leased"), "released: taken at once");

  const brief = createChannelLeases(mesh.db!, "instance-brief", 1);
  t.true(await brief.acquire("ending"));
  await until(() => x.acquire("ending"), "the ended lease taken over");
  t.is(await y.holder("ending"), "instance-x");
  t.false(await brief.acquire("ending"), "its former holder cannot take it back while it is live");

  await y.releaseAll();
  t.is(await x.holder("leased"), undefined, "releaseAll gives up every lease of the instance");
  t.is(await x.holder("ending"), "instance-x", "and no other's");
});

test.serial(
  "one instance opens a leased adapter; a connect on another only checks the credentials; a clean stop hands over at the next renewal",
  async (t) => {
    // A long lease: nothing here waits for one to end.
    const timings = { ttlMs: 60_000, renewMs: 100 };
    const a = registryOn(mesh, t, timings);
    const onA = new FakeAdapter("solo", "Solo");
    await a.register(onA);
    await a.start();
    const b = registryOn(mesh, t, timings);
    const onB = new FakeAdapter("solo", "Solo");
    await b.register(onB);
    await b.start();

    t.deepEqual(await a.connect("solo"), { channelType: "solo", isConnected: true });
    t.is(onA.opened, 1);
    t.is(await leaseHolder("solo"), a.instanceId);
    t.deepEqual(await b.connect("solo"), { channelType: "solo", isConnected: true }, "B sees it connected");
    t.is(onB.checked, 1, "B checked the credentials");
    t.is(onB.opened, 0, "B opened nothing: A runs the adapter");
    await b.reconcile();
    await a.reconcile();
    t.is(onB.opened, 0, "B's renewal rounds leave it closed");
    t.is(onA.opened, 1, "A's keep the one it opened");

    // A refused credential check on a non-holder is 502, and the state stays.
    const c = registryOn(mesh, t, timings);
    const onC = new FakeAdapter("solo", "Solo");
    onC.failWith = new ChannelPlatformError("getMe: 401", "refused");
    await c.register(onC);
    await c.start();
    const refused = (await t.throwsAsync(c.connect("solo"))) as ConnectError;
    t.is(refused.findDetails(HttpErrorStatusSchema)[0]?.status, 502);
    t.is(onC.opened, 0);
    await c.stop();

    await a.stop();
    t.false(onA.isOpen);
    await until(() => onB.isOpen, "B took the released lease and opened its adapter");
    t.is(await leaseHolder("solo"), b.instanceId);
    t.is(onB.opened, 1);
    t.true((await b.list())[0]!.isConnected);
  },
);

test.serial(
  "a holder that died is taken over once its lease has ended; a holder whose lease another instance took closes its adapter",
  async (t) => {
    const timings = { ttlMs: 1_500, renewMs: 100 };
    const a = registryOn(mesh, t, timings);
    const onA = new FakeAdapter("phoenix", "Phoenix", true);
    await a.register(onA);
    await a.start();
    t.true(onA.isOpen, "connected at start: A opened it");
    const b = registryOn(mesh, t, timings);
    const onB = new FakeAdapter("phoenix", "Phoenix", true);
    await b.register(onB);
    await b.start();
    t.is(onB.opened, 0, "A holds the lease");

    // A dies: its adapter is gone, its lease is left to end by itself.
    await a.stop({ keepLeases: true });
    await until(() => onB.isOpen, "B took over once A's lease ended");
    t.is(await leaseHolder("phoenix"), b.instanceId);

    // B's adapter reports a loss; then its lease is taken from under it (as when its renewals
    // stalled past the end and another instance took it).
    await b.reportConnection("phoenix", false, "poll failed");
    const sql = mesh.db!.em().getConnection();
    await sql.execute(
      `update "agents_channel_lease" set "holder" = 'instance-elsewhere', "expires_at" = now() + interval '1 hour' where "channel_type" = 'phoenix'`,
    );
    await until(() => !onB.isOpen, "B closed its adapter");
    t.is(onB.closed, 1);
    await sql.execute(`delete from "agents_channel_lease" where "channel_type" = 'phoenix'`);
    await until(() => onB.isOpen, "B opened it again once the lease was free");
    t.is(onB.opened, 2);
    // The reopened adapter is a fresh loop: the registry records the recovery of the loss it reported.
    await until(
      async () => (await ring.query(mesh.db!.em(), { resource: "phoenix", action: "channel.recovered" }, 10, 0)).events.length === 1,
      "channel.recovered for phoenix",
    );
  },
);
