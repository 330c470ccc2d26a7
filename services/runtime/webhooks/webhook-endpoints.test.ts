// Start-up checks of a module's webhook endpoints: errors name the setting and the item, never its secret.
import test from "ava";
import { displayUrl, resolveWebhookEndpoints, WebhookSettingsError, type WebhookEndpointSettings } from "./webhook-endpoints.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const eventTypes = ["speed_alert", "geofence_breach"];

/** Settings as a module hands them over: an endpoint list, and whether signing is on (it is unless turned off). */
function webhooks(list: { Url: string; Secret?: string; Events?: string }[], signingEnabled = true) {
  const endpoints: WebhookEndpointSettings[] = list.map((e) => ({
    url: e.Url,
    ...(e.Secret === undefined ? {} : { secret: e.Secret }),
    events: e.Events ? e.Events.split(",").map((type) => type.trim()) : [],
  }));
  return { endpoints, signingEnabled, eventTypes, settingsSection: "Webhooks" };
}

test("a valid list resolves, event filters included", (t) => {
  const resolved = resolveWebhookEndpoints(
    webhooks([
      { Url: "https://a.example/hook", Secret: secret },
      { Url: "http://b.example:8080/x", Secret: secret, Events: "geofence_breach" },
    ]),
  );
  t.is(resolved.length, 2);
  t.is(resolved[0]!.events.size, 0);
  t.deepEqual([...resolved[1]!.events], ["geofence_breach"]);
  t.not(resolved[0]!.key, resolved[1]!.key);
  t.is(resolved[0]!.signingKey!.length, 24);
});

test("an endpoint without a secret while signing is on is an error naming its index", (t) => {
  const err = t.throws(
    () => resolveWebhookEndpoints(webhooks([{ Url: "https://a.example/", Secret: secret }, { Url: "https://b.example/" }])),
    {
      instanceOf: WebhookSettingsError,
    },
  );
  t.regex(err!.message, /^Invalid setting Webhooks:Endpoints: item 1 has no Secret while Webhooks:SigningEnabled is true/);
  t.false(err!.message.includes(secret));
});

test("signing off explicitly: no secret needed", (t) => {
  const resolved = resolveWebhookEndpoints(webhooks([{ Url: "https://a.example/" }], false));
  t.is(resolved[0]!.signingKey, undefined);
});

test("a secret that is not base64 is refused without quoting it", (t) => {
  const bad = "whsec_this is not base64 at all";
  const err = t.throws(() => resolveWebhookEndpoints(webhooks([{ Url: "https://a.example/", Secret: bad }])), {
    instanceOf: WebhookSettingsError,
  });
  t.regex(err!.message, /item 0 has a Secret that is not base64/);
  t.false(err!.message.includes("this is not base64"));
});

test("non-http(s) and relative URLs are start-up errors", (t) => {
  for (const url of ["ftp://a.example/x", "file:///etc/passwd", "gopher://a.example/", "/relative"]) {
    t.throws(
      () => resolveWebhookEndpoints(webhooks([{ Url: url, Secret: secret }])),
      { instanceOf: WebhookSettingsError, message: /item 0/ },
      url,
    );
  }
});

test("unknown event types and duplicate URLs are start-up errors", (t) => {
  t.throws(() => resolveWebhookEndpoints(webhooks([{ Url: "https://a.example/", Secret: secret, Events: "speed_alert,observation" }])), {
    message: /unknown event type 'observation' \(known: speed_alert, geofence_breach\)/,
  });
  t.throws(
    () =>
      resolveWebhookEndpoints(
        webhooks([
          { Url: "https://a.example/", Secret: secret },
          { Url: "https://a.example/", Secret: secret },
        ]),
      ),
    { message: /items 0 and 1 have the same Url/ },
  );
});

test("shown URLs carry no credentials", (t) => {
  t.is(displayUrl(new URL("https://user:pa55@hooks.example:8443/in?token=abc&x=1#frag")), "https://hooks.example:8443/in?token=***&x=***");
  t.is(displayUrl(new URL("http://127.0.0.1:3000/hook")), "http://127.0.0.1:3000/hook");
});
