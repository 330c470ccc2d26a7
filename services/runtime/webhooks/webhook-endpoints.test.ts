// Start-up checks of Webhooks:Endpoints: errors name the item, never its secret.
import test from "ava";
import { ConfigError, loadConfig } from "../../runtime/config/index.js";
import { displayUrl, resolveWebhookEndpoints } from "./webhook-endpoints.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function webhooks(flags: string[]) {
  return loadConfig({ env: {}, flags, cwd: "/nonexistent" }).webhooks;
}

const endpoints = (list: unknown[]) => `--Webhooks:Endpoints=${JSON.stringify(list)}`;

test("a valid list resolves, event filters included", (t) => {
  const resolved = resolveWebhookEndpoints(
    webhooks([
      endpoints([
        { Url: "https://a.example/hook", Secret: secret },
        { Url: "http://b.example:8080/x", Secret: secret, Events: "geofence_breach" },
      ]),
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
    () => resolveWebhookEndpoints(webhooks([endpoints([{ Url: "https://a.example/", Secret: secret }, { Url: "https://b.example/" }])])),
    {
      instanceOf: ConfigError,
    },
  );
  t.regex(err!.message, /item 1 has no Secret/);
});

test("signing off explicitly: no secret needed", (t) => {
  const resolved = resolveWebhookEndpoints(webhooks([endpoints([{ Url: "https://a.example/" }]), "--Webhooks:SigningEnabled=false"]));
  t.is(resolved[0]!.signingKey, undefined);
});

test("a secret that is not base64 is refused without quoting it", (t) => {
  const bad = "whsec_this is not base64 at all";
  const err = t.throws(() => resolveWebhookEndpoints(webhooks([endpoints([{ Url: "https://a.example/", Secret: bad }])])), {
    instanceOf: ConfigError,
  });
  t.regex(err!.message, /item 0 has a Secret that is not base64/);
  t.false(err!.message.includes("this is not base64"));
});

test("non-http(s) and relative URLs are start-up errors", (t) => {
  for (const url of ["ftp://a.example/x", "file:///etc/passwd", "gopher://a.example/", "/relative"]) {
    t.throws(
      () => resolveWebhookEndpoints(webhooks([endpoints([{ Url: url, Secret: secret }])])),
      { instanceOf: ConfigError, message: /item 0/ },
      url,
    );
  }
});

test("unknown event types and duplicate URLs are start-up errors", (t) => {
  t.throws(
    () =>
      resolveWebhookEndpoints(webhooks([endpoints([{ Url: "https://a.example/", Secret: secret, Events: "speed_alert,observation" }])])),
    {
      message: /unknown event type 'observation' \(known: speed_alert, geofence_breach\)/,
    },
  );
  t.throws(
    () =>
      resolveWebhookEndpoints(
        webhooks([
          endpoints([
            { Url: "https://a.example/", Secret: secret },
            { Url: "https://a.example/", Secret: secret },
          ]),
        ]),
      ),
    { message: /items 0 and 1 have the same Url/ },
  );
});

test("shown URLs carry no credentials", (t) => {
  t.is(displayUrl(new URL("https://user:pa55@hooks.example:8443/in?token=abc&x=1#frag")), "https://hooks.example:8443/in?token=***&x=***");
  t.is(displayUrl(new URL("http://127.0.0.1:3000/hook")), "http://127.0.0.1:3000/hook");
});
