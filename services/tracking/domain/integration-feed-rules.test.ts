// The provider list, tag merging and the feed body and feed observation rules.
import test from "ava";
import {
  checkFeedInput,
  checkFeedObservation,
  configurationToStore,
  createdDeviceTags,
  feedDeviceIdentifier,
  maxExternalTrackerIdLength,
} from "./integration-feed-rules.js";
import { findProvider, integrationProviders } from "./integration-providers.js";
import { mergeTags, splitTags } from "./integration-tags.js";

test("the 15 documented providers, each ready or bridge-required, ids unique", (t) => {
  t.deepEqual(
    integrationProviders.map((p) => p.id),
    [
      "generic-webhook",
      "gps-http",
      "meshtastic",
      "apple-findmy",
      "google-findhub",
      "samsung-find",
      "home-assistant",
      "owntracks",
      "traccar",
      "signal",
      "telegram",
      "twilio-sms",
      "smtp-email",
      "obd-telematics",
      "ble-sensors",
    ],
  );
  for (const p of integrationProviders) {
    t.true(p.readiness === "ready" || p.readiness === "bridge-required", p.id);
    t.true(p.name.length > 0 && p.description.length > 0 && p.category.length > 0, p.id);
    // The longest provider id still leaves room for a full-length tracker id in a device identifier.
    t.true(feedDeviceIdentifier(p.id, "x".repeat(maxExternalTrackerIdLength)).length <= 200, p.id);
  }
  t.is(findProvider("traccar")?.name, "Traccar");
  t.is(findProvider("Traccar"), undefined);
});

test("tags merge: trimmed, empty entries dropped, repeats removed case-insensitively, order kept", (t) => {
  t.deepEqual(splitTags(" a, ,b ,, c "), ["a", "b", "c"]);
  t.is(mergeTags("fleet, north", "north,van , Fleet,"), "fleet,north,van");
  t.is(mergeTags("Van", "van,VAN,truck"), "Van,truck");
  t.is(mergeTags(null, undefined, " , "), null);
  t.is(mergeTags(null, "x"), "x");
});

test("created device tags are bounded like a device body's", (t) => {
  t.deepEqual(createdDeviceTags("a", "b,a"), { tags: "a,b", malformed: [] });
  const long = createdDeviceTags("x".repeat(1500), "y".repeat(1500));
  t.is(long.tags, null);
  t.deepEqual(
    long.malformed.map((m) => m.field),
    ["observation.tags"],
  );
});

test("a feed body: provider required on create, matched ignoring case and spaces, unknown ones listed", (t) => {
  const ok = checkFeedInput({ provider: " Traccar ", isEnabled: true, autoCreateDevices: false }, { withProvider: true });
  t.deepEqual(ok.malformed, []);
  t.is(ok.provider, "traccar");

  const missing = checkFeedInput({ isEnabled: true, autoCreateDevices: true }, { withProvider: true });
  t.deepEqual(
    missing.malformed.map((m) => m.field),
    ["feed.provider"],
  );

  const unknown = checkFeedInput({ provider: "carrier-pigeon", isEnabled: true, autoCreateDevices: true }, { withProvider: true });
  t.deepEqual(
    unknown.malformed.map((m) => m.field),
    ["feed.provider"],
  );
  t.regex(unknown.malformed[0]!.description, /generic-webhook, gps-http, .*ble-sensors/);

  const update = checkFeedInput({ provider: "ignored", isEnabled: false, autoCreateDevices: false }, { withProvider: false });
  t.deepEqual(update.malformed, [], "an update body has no provider to check");
});

test("a feed body: configuration must be JSON within bounds, and errors never quote it", (t) => {
  const base = { provider: "gps-http", isEnabled: true, autoCreateDevices: true };
  const bad = checkFeedInput({ ...base, configurationJson: '{"password": "s3cr3t", ' }, { withProvider: true });
  t.deepEqual(
    bad.malformed.map((m) => m.field),
    ["feed.configuration_json"],
  );
  t.false(JSON.stringify(bad.malformed).includes("s3cr3t"));

  const deep = checkFeedInput({ ...base, configurationJson: "[".repeat(40) + "]".repeat(40) }, { withProvider: true });
  t.deepEqual(
    deep.malformed.map((m) => m.field),
    ["feed.configuration_json"],
  );

  const big = checkFeedInput({ ...base, configurationJson: JSON.stringify("x".repeat(70_000)) }, { withProvider: true });
  t.deepEqual(
    big.malformed.map((m) => m.field),
    ["feed.configuration_json"],
  );

  const good = checkFeedInput({ ...base, configurationJson: ' { "url": "https://x", "n": [1, 2] } ' }, { withProvider: true });
  t.deepEqual(good.malformed, []);
  t.is(configurationToStore(good.fields.configuration, null).text, '{"url":"https://x","n":[1,2]}', "stored compact");

  const long = checkFeedInput({ ...base, name: "n".repeat(201), defaultTags: "t".repeat(2001) }, { withProvider: true });
  t.deepEqual(long.malformed.map((m) => m.field).sort(), ["feed.default_tags", "feed.name"]);
});

test("configuration to store: masks keep stored secrets; a mask with nothing behind it is refused", (t) => {
  const stored = JSON.stringify({ password: "old", host: "h" });
  t.is(configurationToStore({ password: "***", host: "h2" }, stored).text, '{"password":"old","host":"h2"}');
  const refused = configurationToStore({ password: "***" }, null);
  t.is(refused.text, null);
  t.deepEqual(
    refused.malformed.map((m) => m.field),
    ["feed.configuration_json"],
  );
  t.is(configurationToStore(null, stored).text, null, "no configuration in the body clears it");
});

test("a feed observation: externalTrackerId required and not blank; label, tags and assetId checked", (t) => {
  t.deepEqual(
    checkFeedObservation({}).malformed.map((m) => m.field),
    ["observation.external_tracker_id"],
  );
  t.deepEqual(
    checkFeedObservation({ externalTrackerId: "   " }).malformed.map((m) => m.field),
    ["observation.external_tracker_id"],
  );
  t.deepEqual(
    checkFeedObservation({ externalTrackerId: "x".repeat(181) }).malformed.map((m) => m.field),
    ["observation.external_tracker_id"],
  );
  const ok = checkFeedObservation({
    externalTrackerId: "  abc-1 ",
    label: "Van",
    assetId: "AAAAAAAA-0000-4000-8000-000000000000",
    tags: "x",
  });
  t.deepEqual(ok.malformed, []);
  t.is(ok.externalTrackerId, "abc-1");
  t.is(ok.assetId, "aaaaaaaa-0000-4000-8000-000000000000");
  const bad = checkFeedObservation({ externalTrackerId: "a", assetId: "nope", label: "l".repeat(201), tags: "t".repeat(2001) });
  t.deepEqual(bad.malformed.map((m) => m.field).sort(), ["observation.asset_id", "observation.label", "observation.tags"]);
  t.is(feedDeviceIdentifier("traccar", "abc-1"), "traccar:abc-1");
});
