// The library as a module other than tracking would use it: its own tables under its own prefix,
// its own stream, subject, event types, rendering and settings section. An event recorded in the
// outbox and published reaches every endpoint that takes it, signed; the log, the statistics and
// a 410's disabling are the module's own.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { StringValueSchema } from "@bufbuild/protobuf/wkt";
import test, { type ExecutionContext } from "ava";
import { connect } from "nats";
import { Webhook } from "standardwebhooks";
import { openBus } from "../bus/index.js";
import { openDatabase, type DatabaseModule } from "../database/index.js";
import { joinBundle } from "../outbox/bundle.js";
import { OUTBOX_ROW_HEADER, OutboxEvent, outboxModule } from "../outbox/index.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { createWebhooks, webhookTables, WebhookSettingsError, type WebhookSettings } from "./index.js";

const logger = testLogger("webhooks.test");
const infra = realInfra();
const secret = `whsec_${randomBytes(24).toString("base64")}`;
const tables = webhookTables("hooktest_webhook");
const hooks: DatabaseModule = {
  name: "hooktest",
  entities: tables.entities,
  migrations: [{ name: "hooktest-0001-webhooks", class: tables.migrations[0]! }],
};

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function receiver(t: ExecutionContext) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.statusCode = req.url === "/gone" ? 410 : 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { received, url: (path: string) => `http://127.0.0.1:${port}${path}` };
}

async function until<T>(what: string, probe: () => T | false | Promise<T | false>): Promise<T> {
  for (let i = 0; i < 1_000; i++) {
    const value = await probe();
    if (value !== false) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

function settings(endpoints: WebhookSettings["endpoints"]): WebhookSettings {
  return {
    endpoints,
    signingEnabled: true,
    timeoutSeconds: 5,
    maxAttempts: 3,
    retryInitialDelayMs: 10,
    retryMaxDelayMs: 50,
    allowLoopback: true,
    allowPrivateNetworks: false,
  };
}

test("a module's own events, tables and settings: delivered signed, logged, 410 disables", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-webhooks-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (infra.databaseUrl) {
    const created = await createTestDatabaseUrl(infra.databaseUrl);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({ url, dataDir, modules: [outboxModule, hooks], logger });
  t.teardown(() => db.close());

  const suffix = randomBytes(4).toString("hex");
  const stream = `HOOKTEST_${suffix.toUpperCase()}`;
  const subject = `hooktest${suffix}.thing.happened`;
  const bus = await openBus({ url: infra.natsUrl, logger });
  t.teardown(async () => {
    await bus.close();
    if (infra.natsUrl) {
      const nc = await connect({ servers: infra.natsUrl });
      await (await nc.jetstreamManager()).streams.delete(stream).catch(() => undefined);
      await nc.close();
    }
  });
  await bus.ensureStreams([{ name: stream, subjects: [`hooktest${suffix}.>`] }]);

  const target = await receiver(t);
  const webhooks = createWebhooks({
    name: "hooktest",
    settings: settings([
      { url: target.url("/all"), secret, events: [] },
      { url: target.url("/gone"), secret, events: ["thing_happened"] },
      { url: target.url("/other"), secret, events: ["other_thing"] },
    ]),
    settingsSection: "Hooks",
    eventTypes: ["thing_happened", "other_thing"],
    stream,
    sources: [
      {
        subject,
        name: "things",
        render: (m) => ({
          eventId: m.id,
          type: "thing_happened",
          occurredAt: new Date("2024-05-01T10:00:00.000Z"),
          data: { value: fromBinary(StringValueSchema, m.data).value },
        }),
      },
    ],
    tables,
    db,
    bus,
    logger,
  });
  t.is(webhooks.takers("thing_happened"), 2);
  await webhooks.start();
  t.teardown(() => webhooks.stop());

  const publish = async (value: string, inOutbox = true) => {
    const id = randomUUID();
    const message = create(StringValueSchema, { value });
    // A bare outbox row: this test's event type is a well-known message with no subject option.
    const payload = toBinary(StringValueSchema, message);
    if (inOutbox)
      await db.em().insert(OutboxEvent, { id, subject, payload, headers: {}, createdAt: new Date(), publishedAt: null, lastError: null });
    await bus.publish(subject, toBinary(StringValueSchema, message), { id });
    return id;
  };
  // An event this database never recorded (another deployment's, on a shared stream) goes nowhere.
  await publish("foreign", false);
  const id = await publish("first");
  const delivered = await until("both deliveries", () => target.received.length >= 2 && [...target.received]);
  t.deepEqual(delivered.map((r) => r.path).sort(), ["/all", "/gone"]);
  for (const r of delivered) {
    t.is(r.headers["webhook-id"], `msg_${id}`);
    const verified = new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    t.deepEqual(verified, { type: "thing_happened", timestamp: "2024-05-01T10:00:00.000Z", data: { value: "first" } });
  }

  const log = await until("both attempts logged", async () => {
    const page = await webhooks.attempts({ limit: 10, offset: 0 });
    return page.totalCount === 2 && page;
  });
  t.deepEqual(log.rows.map((r) => [r.success, r.httpStatusCode, r.correlationId]).sort(), [
    [false, 410, `msg_${id}`],
    [true, 204, `msg_${id}`],
  ]);
  t.is((await webhooks.attempts({ success: false, limit: 10, offset: 0 })).totalCount, 1);
  t.is((await webhooks.attempts({ eventType: "other_thing", limit: 10, offset: 0 })).totalCount, 0);
  t.is((await webhooks.attempts({ since: new Date(Date.now() + 60_000), limit: 10, offset: 0 })).totalCount, 0);
  t.deepEqual(await webhooks.disabledEndpoints(), [target.url("/gone")]);
  t.like(await webhooks.stats(), { deliveries: 2, failures: 1, queueDepth: 0 });

  // The disabled endpoint gets nothing more; the other still does.
  await publish("second");
  await until("the second delivery", () => target.received.length >= 3);
  await until("its attempt logged", async () => (await webhooks.attempts({ limit: 10, offset: 0 })).totalCount === 3);
  t.deepEqual(
    target.received.map((r) => r.path),
    [...delivered.map((r) => r.path), "/all"],
  );
  // A bundled event (a row carrying several) names its row in the outbox-row header: it is ours
  // when that row is in our outbox, even once the row no longer lists it (a bundle published in
  // part keeps only the events still to go: here the second went out, the third waits); a header
  // naming a row we never wrote is another deployment's.
  const [first, second, third, stranger] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const payloadOf = (value: string) => toBinary(StringValueSchema, create(StringValueSchema, { value }));
  await db.em().insert(OutboxEvent, {
    id: first,
    subject,
    payload: joinBundle([payloadOf("bundled three")]),
    eventIds: [third],
    headers: {},
    createdAt: new Date(),
    publishedAt: null,
    lastError: null,
  });
  await bus.publish(subject, payloadOf("stranger"), { id: stranger, headers: { [OUTBOX_ROW_HEADER]: randomUUID() } });
  await bus.publish(subject, payloadOf("bundled two"), { id: second, headers: { [OUTBOX_ROW_HEADER]: first } });
  await until("the bundled event's delivery", () => target.received.length >= 4);
  t.is(target.received[3]!.headers["webhook-id"], `msg_${second}`);
  const [row] = await db.em().execute<{ n: string }[]>(`select count(*) as n from "hooktest_webhook_delivery"`);
  t.is(Number(row!.n), 4, "the module's own tables hold its deliveries, and none for the stranger");
});

test("tables keep the names a module's migration gave them", (t) => {
  const tracking = webhookTables("tracking_webhook");
  t.deepEqual(tracking.names, {
    delivery: "tracking_webhook_delivery",
    attempt: "tracking_webhook_attempt",
    endpoint: "tracking_webhook_endpoint",
    consumer: "tracking_webhook_consumer",
  });
  t.deepEqual(
    tracking.entities.map((e) => [e.meta.className, e.meta.tableName]),
    [
      ["TrackingWebhookDelivery", "tracking_webhook_delivery"],
      ["TrackingWebhookAttempt", "tracking_webhook_attempt"],
      ["TrackingWebhookEndpoint", "tracking_webhook_endpoint"],
      ["TrackingWebhookConsumer", "tracking_webhook_consumer"],
    ],
  );
  for (const bad of ["Tracking", "a-b", 'x"; drop table y; --', ""]) t.throws(() => webhookTables(bad), undefined, bad);
});

test("a bad endpoint names the module's settings section and its index, never its secret", (t) => {
  const err = t.throws(
    () =>
      createWebhooks({
        name: "hooktest",
        settings: settings([{ url: "https://a.example/", secret, events: ["nope"] }]),
        settingsSection: "Hooks",
        eventTypes: ["thing_happened"],
        stream: "HOOKTEST",
        sources: [],
        tables,
        // Never reached: the settings are checked first.
        db: undefined as never,
        bus: undefined as never,
        logger,
      }),
    { instanceOf: WebhookSettingsError },
  );
  t.regex(err!.message, /^Invalid setting Hooks:Endpoints: item 0 lists the unknown event type 'nope' \(known: thing_happened\)/);
  t.false(err!.message.includes(secret.slice(6)));
});
