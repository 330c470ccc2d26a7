// The /api/integrations paths through the running tracking front with plain fetch: providers, feed
// CRUD with masked secrets, feed observations (device auto-creation, tag merge, refusals) and the
// events they publish. With NATS_URL set the events are read by a plain `nats` JetStream consumer;
// on the embedded defaults by the in-process bus.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import {
  DeviceCreatedSchema,
  DeviceUpdatedSchema,
  IntegrationFeedCreatedSchema,
  IntegrationFeedDeletedSchema,
  IntegrationFeedUpdatedSchema,
  ObservationRecordedSchema,
  SpeedAlertRaisedSchema,
} from "../../gen/tracking/v1/events_pb.js";
import { SpeedAlertEntity } from "../../services/tracking/store/alert-entities.js";
import { DeviceEntity } from "../../services/tracking/store/device-entity.js";
import { IntegrationFeedEntity } from "../../services/tracking/store/integration-feed-entity.js";
import { ObservationEntity } from "../../services/tracking/store/observation-entity.js";
import { type SeenEvent, watchStream } from "../support/event-watch.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";
import { sendJson } from "../support/rest.js";

let mesh: TestMesh;
let base: string;
let seen: SeenEvent[] = [];
let stopWatching: () => Promise<void> = async () => {};

test.before(async () => {
  mesh = await startTestMesh();
  base = mesh.frontUrl("tracking");
  ({ seen, stop: stopWatching } = await watchStream(mesh));
});
test.after.always(async () => {
  await stopWatching();
  await mesh?.close();
});

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  type: string;
  body: Json & { errors?: Record<string, string[]>; detail?: string };
  text: string;
}

const send = (method: string, path: string, body?: unknown): Promise<Answer> => sendJson<Answer["body"]>(`${base}${path}`, method, body);
const get = (path: string) => send("GET", path);
const post = (path: string, body: unknown) => send("POST", path, body);
const put = (path: string, body: unknown) => send("PUT", path, body);
const del = (path: string) => send("DELETE", path);

let counter = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${counter++}`;
const unknownId = "00000000-0000-4000-8000-000000000000";

async function newFeed(body: Json = {}): Promise<Json & { id: string }> {
  const res = await post("/api/integrations", {
    name: unique("feed"),
    provider: "gps-http",
    isEnabled: true,
    autoCreateDevices: true,
    ...body,
  });
  if (res.status !== 200) throw new Error(`feed: ${res.status} ${res.text}`);
  return res.body as Json & { id: string };
}

/** Observation times in minutes from a start in the past. */
const start = Date.now() - 3 * 60 * 60 * 1000;
const at = (minutes: number) => new Date(start + minutes * 60_000).toISOString();
const fix = (externalTrackerId: string | undefined, minutes: number, extra: Json = {}) => ({
  externalTrackerId,
  observedAt: at(minutes),
  latitude: 51.5,
  longitude: -0.12,
  ...extra,
});

const errorFields = (a: Answer) => Object.keys(a.body?.errors ?? {}).sort();
const storedFeed = (id: string) => mesh.db!.em().findOneOrFail(IntegrationFeedEntity, { id });
const deviceByIdentifier = (identifier: string) => mesh.db!.em().findOne(DeviceEntity, { identifier });

/** Events published on `subject` whose payload `pick` matches, decoded. */
function eventsOf<T>(subject: string, decode: (data: Uint8Array) => T, pick: (event: T) => boolean): T[] {
  return seen
    .filter((s) => s.subject === subject)
    .map((s) => decode(s.data))
    .filter(pick);
}

test("GET /api/integrations/providers lists the 15 providers, each ready or bridge-required", async (t) => {
  const res = await get("/api/integrations/providers");
  t.is(res.status, 200);
  t.regex(res.type, /^application\/json/);
  const providers = res.body as unknown as { id: string; name: string; readiness: string; category: string; description: string }[];
  t.true(Array.isArray(providers));
  t.deepEqual(providers.map((p) => p.id).sort(), [
    "apple-findmy",
    "ble-sensors",
    "generic-webhook",
    "google-findhub",
    "gps-http",
    "home-assistant",
    "meshtastic",
    "obd-telematics",
    "owntracks",
    "samsung-find",
    "signal",
    "smtp-email",
    "telegram",
    "traccar",
    "twilio-sms",
  ]);
  t.deepEqual([...new Set(providers.map((p) => p.readiness))].sort(), ["bridge-required", "ready"]);
  t.like(
    providers.find((p) => p.id === "generic-webhook"),
    { readiness: "ready", name: "Generic webhook" },
  );
  for (const p of providers) t.true(p.name.length > 0 && p.description.length > 0 && p.category.length > 0, p.id);
});

test("feed CRUD: create, list (newest first), update keeps the provider, delete answers 200 then 404", async (t) => {
  const name = unique("crud");
  const created = await post("/api/integrations", {
    name,
    provider: "traccar",
    isEnabled: true,
    autoCreateDevices: false,
    defaultTags: "fleet",
    configurationJson: '{"url": "https://traccar.example"}',
  });
  t.is(created.status, 200);
  const feed = created.body;
  t.regex(String(feed.id), /^[0-9a-f-]{36}$/);
  t.like(feed, {
    name,
    provider: "traccar",
    isEnabled: true,
    autoCreateDevices: false,
    defaultTags: "fleet",
    configurationJson: '{"url":"https://traccar.example"}',
  });
  t.truthy(Date.parse(String(feed.createdAt)));
  t.is(feed.createdAt, feed.updatedAt);

  const second = await newFeed({ defaultTags: null, configurationJson: null });
  t.is(second.defaultTags, null, "unset nullable fields are written as null");
  t.is(second.configurationJson, null);

  const list = await get("/api/integrations");
  t.is(list.status, 200);
  const ids = (list.body as unknown as Json[]).map((f) => f.id);
  t.true(ids.indexOf(second.id) < ids.indexOf(feed.id), "newest first");
  t.deepEqual(
    (list.body as unknown as Json[]).find((f) => f.id === feed.id),
    feed,
  );

  const updated = await put(`/api/integrations/${feed.id}`, { name: "renamed", isEnabled: false, autoCreateDevices: true });
  t.is(updated.status, 200);
  t.like(updated.body, {
    id: feed.id,
    name: "renamed",
    provider: "traccar",
    isEnabled: false,
    autoCreateDevices: true,
    defaultTags: null,
    configurationJson: null,
  });
  t.is(updated.body.createdAt, feed.createdAt);
  t.true(Date.parse(String(updated.body.updatedAt)) >= Date.parse(String(feed.updatedAt)));

  const withProvider = await put(`/api/integrations/${feed.id}`, { provider: "owntracks", isEnabled: true, autoCreateDevices: true });
  t.is(withProvider.status, 400, "provider is fixed after create: an unknown property of the update body");
  t.is(withProvider.type, "application/problem+json");
  t.deepEqual(errorFields(withProvider), ["provider"]);
  t.is((await storedFeed(String(feed.id))).provider, "traccar");
  t.false((await storedFeed(String(feed.id))).isEnabled, "the refused update changed nothing");

  const deleted = await del(`/api/integrations/${feed.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body, { id: feed.id, deleted: true, unlinkedDevices: 0 });
  t.is((await del(`/api/integrations/${feed.id}`)).status, 404);
  t.is((await put(`/api/integrations/${feed.id}`, { isEnabled: true, autoCreateDevices: true })).status, 404);
  t.false(((await get("/api/integrations")).body as unknown as Json[]).some((f) => f.id === feed.id));
});

test("bad feed bodies are 400 naming the field and store nothing", async (t) => {
  // Other tests create feeds meanwhile: these bodies carry a name of their own to count by.
  const marker = unique("refused");
  const cases: [string, Json, string[]][] = [
    ["unknown provider", { provider: "carrier-pigeon", isEnabled: true, autoCreateDevices: true }, ["provider"]],
    ["no provider", { isEnabled: true, autoCreateDevices: true }, ["provider"]],
    ["null provider", { provider: null, isEnabled: true, autoCreateDevices: true }, ["provider"]],
    ["missing isEnabled", { provider: "gps-http", autoCreateDevices: true }, ["isEnabled"]],
    ["null autoCreateDevices", { provider: "gps-http", isEnabled: true, autoCreateDevices: null }, ["autoCreateDevices"]],
    [
      "invalid configurationJson",
      { provider: "gps-http", isEnabled: true, autoCreateDevices: true, configurationJson: '{"token": "abc",' },
      ["configurationJson"],
    ],
    [
      "configurationJson not text",
      { provider: "gps-http", isEnabled: true, autoCreateDevices: true, configurationJson: { token: "abc" } },
      ["configurationJson"],
    ],
    [
      "mask with nothing stored",
      { provider: "gps-http", isEnabled: true, autoCreateDevices: true, configurationJson: '{"password": "***"}' },
      ["configurationJson"],
    ],
    ["name too long", { provider: "gps-http", isEnabled: true, autoCreateDevices: true, name: "n".repeat(201) }, ["name"]],
  ];
  for (const [what, body, fields] of cases) {
    const res = await post("/api/integrations", { name: marker, ...body });
    t.is(res.status, 400, what);
    t.is(res.type, "application/problem+json", what);
    t.deepEqual(errorFields(res), fields, `${what}: ${res.text}`);
    t.false(res.text.includes("abc"), `${what}: the configuration is not echoed`);
  }
  const unknown = await post("/api/integrations", cases[0]![1]);
  t.regex(unknown.text, /generic-webhook/, "the allowed providers are named");
  t.regex(unknown.text, /ble-sensors/);
  t.is(
    (await post("/api/integrations", { name: marker, provider: "gps-http", isEnabled: true, autoCreateDevices: true, extra: 1 })).status,
    400,
    "unknown property",
  );
  t.is(await mesh.db!.em().count(IntegrationFeedEntity, { name: marker }), 0);

  const feed = await newFeed();
  const badUpdate = await put(`/api/integrations/${feed.id}`, { isEnabled: true, autoCreateDevices: true, configurationJson: "not json" });
  t.is(badUpdate.status, 400);
  t.deepEqual(errorFields(badUpdate), ["configurationJson"]);
  t.is((await put("/api/integrations/not-a-uuid", { isEnabled: true, autoCreateDevices: true })).status, 400);
  t.is((await del("/api/integrations/not-a-uuid")).status, 400);
});

test("secrets are masked in create, list and update answers and in events; a masked value sent back keeps the stored secret", async (t) => {
  const config = {
    url: "https://hooks.example/in",
    password: "hunter2-pass",
    nested: { apiKey: "key-123-abc", region: "eu" },
    accounts: [{ user: "ops", token: "tok-987-xyz" }],
  };
  const secrets = ["hunter2-pass", "key-123-abc", "tok-987-xyz"];
  const created = await post("/api/integrations", {
    name: unique("secret"),
    provider: "generic-webhook",
    isEnabled: true,
    autoCreateDevices: true,
    configurationJson: JSON.stringify(config),
  });
  t.is(created.status, 200);
  const id = String(created.body.id);
  const masked = {
    url: "https://hooks.example/in",
    password: "***",
    nested: { apiKey: "***", region: "eu" },
    accounts: [{ user: "ops", token: "***" }],
  };
  t.deepEqual(JSON.parse(String(created.body.configurationJson)), masked);
  for (const s of secrets) t.false(created.text.includes(s), `create answer leaks ${s}`);

  const list = await get("/api/integrations");
  for (const s of secrets) t.false(list.text.includes(s), `list leaks ${s}`);
  t.deepEqual(JSON.parse(String((list.body as unknown as Json[]).find((f) => f.id === id)!.configurationJson)), masked);

  t.deepEqual(JSON.parse((await storedFeed(id)).configurationJson!), config, "the store keeps the real values");

  // Send the answer back with a changed URL and a new token: masks keep, new values replace.
  const edited = { ...masked, url: "https://hooks.example/v2", accounts: [{ user: "ops", token: "tok-new-456" }] };
  const updated = await put(`/api/integrations/${id}`, {
    isEnabled: true,
    autoCreateDevices: true,
    configurationJson: JSON.stringify(edited),
  });
  t.is(updated.status, 200);
  t.deepEqual(JSON.parse(String(updated.body.configurationJson)), { ...masked, url: "https://hooks.example/v2" });
  t.false(updated.text.includes("tok-new-456"));
  t.deepEqual(JSON.parse((await storedFeed(id)).configurationJson!), {
    ...config,
    url: "https://hooks.example/v2",
    accounts: [{ user: "ops", token: "tok-new-456" }],
  });

  // A mask where nothing was stored is refused, and the stored configuration stays.
  const orphan = await put(`/api/integrations/${id}`, {
    isEnabled: true,
    autoCreateDevices: true,
    configurationJson: '{"privateKey": "***"}',
  });
  t.is(orphan.status, 400);
  t.deepEqual(errorFields(orphan), ["configurationJson"]);
  t.is(JSON.parse((await storedFeed(id)).configurationJson!).password, "hunter2-pass");

  await del(`/api/integrations/${id}`);
  await mesh.drainOutbox();
  await until(
    () =>
      seen.some(
        (s) =>
          s.subject === "tracking.v1.integration_feed.deleted" &&
          fromBinary(IntegrationFeedDeletedSchema, s.data).integrationFeed?.id === id,
      ),
    "the feed's deleted event",
  );
  const mine = seen
    .filter((s) => s.subject.startsWith("tracking.v1.integration_feed."))
    .filter((s) => {
      const schema = s.subject.endsWith("created")
        ? IntegrationFeedCreatedSchema
        : s.subject.endsWith("updated")
          ? IntegrationFeedUpdatedSchema
          : IntegrationFeedDeletedSchema;
      return fromBinary(schema, s.data).integrationFeed?.id === id;
    });
  t.deepEqual(
    mine.map((s) => s.subject),
    ["tracking.v1.integration_feed.created", "tracking.v1.integration_feed.updated", "tracking.v1.integration_feed.deleted"],
  );
  const decoder = new TextDecoder("latin1");
  for (const s of mine) {
    for (const secret of [...secrets, "tok-new-456"]) t.false(decoder.decode(s.data).includes(secret), `${s.subject} leaks ${secret}`);
  }
  t.deepEqual(JSON.parse(fromBinary(IntegrationFeedCreatedSchema, mine[0]!.data).integrationFeed!.configurationJson!), masked);
});

test("auto-create: an unknown tracker becomes a linked device with merged tags; the next fix reuses it", async (t) => {
  const asset = await post("/api/assets", { name: unique("asset"), speedThresholdKmh: 100 });
  const feed = await newFeed({ provider: "owntracks", defaultTags: "fleet, north", autoCreateDevices: true });
  const tracker = unique("trk");

  const first = await post(
    `/api/integrations/${feed.id}/observations`,
    fix(tracker, 0, { label: "Van 7", assetId: asset.body.id, tags: "north, van ,Fleet,", speedKmh: 40, metadata: '{"battery": 80}' }),
  );
  t.is(first.status, 200, first.text);
  t.like(first.body, { feedId: feed.id, deviceIdentifier: `owntracks:${tracker}`, createdDevice: true, duplicate: false });
  const deviceId = String(first.body.deviceId);
  t.like(first.body.observation as Json, {
    deviceId,
    source: "integration",
    latitude: 51.5,
    longitude: -0.12,
    speedKmh: 40,
    metadata: '{"battery": 80}',
  });

  const device = await get(`/api/devices/${deviceId}`);
  t.like(device.body, {
    identifier: `owntracks:${tracker}`,
    label: "Van 7",
    assetId: asset.body.id,
    provider: "owntracks",
    externalId: tracker,
    integrationFeedId: feed.id,
    tags: "fleet,north,van",
  });
  t.is(Date.parse(String(device.body.lastSeenAt)), Date.parse(at(0)));

  // Same tracker again, faster than its asset allows: same device, and the ingest rules apply.
  const second = await post(
    `/api/integrations/${feed.id}/observations`,
    fix(`  ${tracker} `, 1, { label: "ignored", tags: "ignored", speedKmh: 150 }),
  );
  t.is(second.status, 200, second.text);
  t.like(second.body, { deviceId, createdDevice: false, duplicate: false });
  t.like((await get(`/api/devices/${deviceId}`)).body, { label: "Van 7", tags: "fleet,north,van" }, "an existing device is used as it is");
  const alerts = await mesh.db!.em().find(SpeedAlertEntity, { deviceId });
  t.is(alerts.length, 1, "the speed rule of ingest ran");
  t.is(alerts[0]!.thresholdKmh, 100);

  // Same observedAt: a duplicate, answered with the stored observation.
  const again = await post(`/api/integrations/${feed.id}/observations`, fix(tracker, 1, { latitude: 48.85 }));
  t.is(again.status, 200);
  t.like(again.body, { deviceId, createdDevice: false, duplicate: true });
  t.is((again.body.observation as Json).id, (second.body.observation as Json).id);
  t.is(await mesh.db!.em().count(ObservationEntity, { deviceId }), 2);
  t.is(await mesh.db!.em().count(DeviceEntity, { identifier: `owntracks:${tracker}` }), 1);

  await mesh.drainOutbox();
  const obsIds = [(first.body.observation as Json).id, (second.body.observation as Json).id];
  await until(
    () =>
      eventsOf(
        "tracking.v1.observation.recorded",
        (d) => fromBinary(ObservationRecordedSchema, d),
        (e) => e.observation?.deviceId === deviceId,
      ).length >= 2,
    "two observation events",
  );
  const createdEvents = eventsOf(
    "tracking.v1.device.created",
    (d) => fromBinary(DeviceCreatedSchema, d),
    (e) => e.device?.id === deviceId,
  );
  t.is(createdEvents.length, 1);
  t.is(createdEvents[0]!.device?.integrationFeedId, feed.id);
  t.deepEqual(
    eventsOf(
      "tracking.v1.observation.recorded",
      (d) => fromBinary(ObservationRecordedSchema, d),
      (e) => e.observation?.deviceId === deviceId,
    ).map((e) => e.observation?.id),
    obsIds,
    "the duplicate published nothing",
  );
  await until(
    () =>
      eventsOf(
        "tracking.v1.speed_alert.raised",
        (d) => fromBinary(SpeedAlertRaisedSchema, d),
        (e) => e.speedAlert?.deviceId === deviceId,
      ).length === 1,
    "the speed alert event",
  );
});

test("concurrent first fixes of one tracker create one device", async (t) => {
  const feed = await newFeed({ provider: "gps-http" });
  const tracker = unique("race");
  const answers = await Promise.all([0, 1, 2, 3].map((i) => post(`/api/integrations/${feed.id}/observations`, fix(tracker, 10 + i))));
  t.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200],
  );
  t.is(new Set(answers.map((a) => a.body.deviceId)).size, 1);
  t.is(answers.filter((a) => a.body.createdDevice).length, 1);
  t.is(await mesh.db!.em().count(ObservationEntity, { deviceId: String(answers[0]!.body.deviceId) }), 4);
});

test("without autoCreateDevices an unknown tracker is refused (400) and a known device is used", async (t) => {
  const feed = await newFeed({ provider: "traccar", autoCreateDevices: false });
  const tracker = unique("known");
  const refused = await post(`/api/integrations/${feed.id}/observations`, fix(tracker, 0));
  t.is(refused.status, 400);
  t.deepEqual(errorFields(refused), ["externalTrackerId"]);
  t.is(await deviceByIdentifier(`traccar:${tracker}`), null);

  const made = await post("/api/devices", { identifier: `traccar:${tracker}`, label: "made by hand" });
  const accepted = await post(`/api/integrations/${feed.id}/observations`, fix(tracker, 0));
  t.is(accepted.status, 200, accepted.text);
  t.like(accepted.body, { deviceId: made.body.id, deviceIdentifier: `traccar:${tracker}`, createdDevice: false });
  t.is((accepted.body.observation as Json).source, "integration");
});

test("refusals: disabled feed 422, unknown feed 404, bad feed id 400, missing or blank externalTrackerId 400, bad position 422, unknown asset 404; none creates a device", async (t) => {
  const disabled = await newFeed({ isEnabled: false });
  const enabled = await newFeed();
  const tracker = unique("refused");
  const cases: [string, string, unknown, number, string[]][] = [
    ["disabled feed", disabled.id, fix(tracker, 0), 422, []],
    ["unknown feed", unknownId, fix(tracker, 0), 404, []],
    ["feed id not a uuid", "feed-1", fix(tracker, 0), 400, ["id"]],
    ["missing externalTrackerId", enabled.id, fix(undefined, 0), 400, ["externalTrackerId"]],
    ["null externalTrackerId", enabled.id, { ...fix(undefined, 0), externalTrackerId: null }, 400, ["externalTrackerId"]],
    ["blank externalTrackerId", enabled.id, fix("   ", 0), 400, ["externalTrackerId"]],
    ["missing latitude", enabled.id, { ...fix(tracker, 0), latitude: undefined }, 400, ["latitude"]],
    ["latitude out of range", enabled.id, fix(tracker, 0, { latitude: 95 }), 422, ["latitude"]],
    ["future fix", enabled.id, fix(tracker, 0, { observedAt: new Date(Date.now() + 10 * 60_000).toISOString() }), 422, ["observedAt"]],
    ["assetId not a uuid", enabled.id, fix(tracker, 0, { assetId: "asset-1" }), 400, ["assetId"]],
    ["unknown asset", enabled.id, fix(tracker, 0, { assetId: unknownId }), 404, ["assetId"]],
    ["unknown property", enabled.id, fix(tracker, 0, { deviceId: unknownId }), 400, []],
  ];
  for (const [what, feedId, body, status, fields] of cases) {
    const res = await post(`/api/integrations/${feedId}/observations`, body);
    t.is(res.status, status, `${what}: ${res.text}`);
    t.is(res.type, "application/problem+json", what);
    if (fields.length) t.deepEqual(errorFields(res), fields, `${what}: ${res.text}`);
  }
  const noBody = await fetch(`${base}/api/integrations/${enabled.id}/observations`, {
    method: "POST",
    headers: { "content-type": "application/json" },
  });
  t.is(noBody.status, 400);
  t.is(await deviceByIdentifier(`gps-http:${tracker}`), null, "no refused call created the device");

  // Enabling the feed is enough for the same fix to be accepted.
  await put(`/api/integrations/${disabled.id}`, { isEnabled: true, autoCreateDevices: true });
  t.is((await post(`/api/integrations/${disabled.id}/observations`, fix(tracker, 0))).status, 200);
});

test("deleting a feed keeps its devices and their history, unlinked, each with a device.updated event", async (t) => {
  const feed = await newFeed({ provider: "home-assistant" });
  const a = await post(`/api/integrations/${feed.id}/observations`, fix(unique("ha"), 0));
  const b = await post(`/api/integrations/${feed.id}/observations`, fix(unique("ha"), 0));
  await post(
    `/api/integrations/${feed.id}/observations`,
    fix(String((a.body.deviceIdentifier as string).slice("home-assistant:".length)), 1),
  );
  const deviceIds = [String(a.body.deviceId), String(b.body.deviceId)];

  const deleted = await del(`/api/integrations/${feed.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body, { id: feed.id, deleted: true, unlinkedDevices: 2 });

  for (const id of deviceIds) {
    const device = await get(`/api/devices/${id}`);
    t.is(device.status, 200, "the device stays");
    t.is(device.body.integrationFeedId, null, "and loses its link");
    t.is(device.body.provider, "home-assistant");
  }
  const history = await get(`/api/observations/history?deviceId=${deviceIds[0]}`);
  t.is(history.body.totalCount, 2, "its observation history stays");

  await mesh.drainOutbox();
  await until(
    () =>
      deviceIds.every(
        (id) =>
          eventsOf(
            "tracking.v1.device.updated",
            (d) => fromBinary(DeviceUpdatedSchema, d),
            (e) => e.device?.id === id,
          ).length > 0,
      ),
    "device.updated for both devices",
  );
  for (const id of deviceIds) {
    const [update] = eventsOf(
      "tracking.v1.device.updated",
      (d) => fromBinary(DeviceUpdatedSchema, d),
      (e) => e.device?.id === id,
    );
    t.is(update!.device?.integrationFeedId, undefined);
  }
  await until(
    () =>
      eventsOf(
        "tracking.v1.integration_feed.deleted",
        (d) => fromBinary(IntegrationFeedDeletedSchema, d),
        (e) => e.integrationFeed?.id === feed.id,
      ).length === 1,
    "the feed's deleted event",
  );
  t.is((await post(`/api/integrations/${feed.id}/observations`, fix("x", 5))).status, 404);
});

test("with API keys: managing feeds needs an operator key; an ingest key may only send feed observations", async (t) => {
  const opsKey = `ops-${unique("key")}`;
  const ingestKey = `ingest-${unique("key")}`;
  const keyed = await startTestMesh({
    flags: [
      `--Auth:ApiKeys=${JSON.stringify([
        { Name: "ops", Role: "operator", Key: opsKey },
        { Name: "relay", Role: "ingest", Key: ingestKey },
      ])}`,
    ],
  });
  t.teardown(() => keyed.close());
  const url = keyed.frontUrl("tracking");
  const call = async (method: string, path: string, key: string | undefined, body?: unknown) => {
    const headers: Record<string, string> = body === undefined ? {} : { "content-type": "application/json" };
    if (key) headers["x-api-key"] = key;
    const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Json };
  };
  const feedBody = { provider: "generic-webhook", isEnabled: true, autoCreateDevices: true };

  t.is((await call("GET", "/api/integrations/providers", undefined)).status, 401);
  t.is((await call("POST", "/api/integrations", ingestKey, feedBody)).status, 403, "an ingest key cannot create feeds");
  t.is((await call("GET", "/api/integrations", ingestKey)).status, 403);
  const feed = await call("POST", "/api/integrations", opsKey, feedBody);
  t.is(feed.status, 200);
  const path = `/api/integrations/${String(feed.body.id)}/observations`;

  t.is((await call("POST", path, undefined, fix("relay-1", 0))).status, 401);
  const sent = await call("POST", path, ingestKey, fix("relay-1", 0));
  t.is(sent.status, 200);
  t.like(sent.body, { deviceIdentifier: "generic-webhook:relay-1", createdDevice: true });
  t.is((await call("POST", path, opsKey, fix("relay-1", 1))).status, 200, "an operator key may send too");
  t.is((await call("DELETE", `/api/integrations/${String(feed.body.id)}`, ingestKey)).status, 403);
});
