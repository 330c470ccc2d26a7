// Which configuration keys count as secret, masking at any depth, and keeping stored secrets
// where an update sends the mask back.
import test from "ava";
import {
  isSecretKey,
  keepStoredSecrets,
  maskConfigurationText,
  maskSecrets,
  maskedValue,
  nestsDeeperThan,
  type JsonValue,
} from "./integration-secrets.js";

test("secret keys are recognised in any case and naming style; ordinary keys are not", (t) => {
  for (const key of [
    "password",
    "PASSWORD",
    "dbPassword",
    "passwd",
    "clientSecret",
    "client_secret",
    "token",
    "accessToken",
    "refresh-token",
    "apiKey",
    "api_key",
    "APIKey",
    "X-Api-Key",
    "key",
    "signingKey",
    "private_key",
    "privateKey",
    "private",
    "auth",
    "basicAuth",
    "Authorization",
    "credentials",
    "Credential",
    "pwd",
    "passphrase",
  ]) {
    t.true(isSecretKey(key), key);
  }
  for (const key of ["url", "host", "username", "monkey", "keyboard", "author", "deviceId", "interval", "topic", "privacyMode"]) {
    t.false(isSecretKey(key), key);
  }
});

test("masking replaces every non-null scalar at or under a secret key, at any depth, and nothing else", (t) => {
  const config: JsonValue = {
    url: "https://tracker.example",
    password: "hunter2",
    nested: { deeper: [{ apiKey: "k-1", name: "first" }, { token: 42 }] },
    auth: { type: "basic", user: "u", pass: "p", extra: null, enabled: true },
    empty: null,
    secret: null,
  };
  t.deepEqual(maskSecrets(config), {
    url: "https://tracker.example",
    password: maskedValue,
    nested: { deeper: [{ apiKey: maskedValue, name: "first" }, { token: maskedValue }] },
    auth: { type: maskedValue, user: maskedValue, pass: maskedValue, extra: null, enabled: maskedValue },
    empty: null,
    secret: null,
  });
});

test("masked text never contains a stored secret, even when the stored text is not JSON", (t) => {
  const masked = maskConfigurationText(JSON.stringify({ Password: "s3cr3t-value", host: "h" }));
  t.false(masked!.includes("s3cr3t-value"));
  t.deepEqual(JSON.parse(masked!), { Password: maskedValue, host: "h" });
  t.is(maskConfigurationText("password=s3cr3t-value"), JSON.stringify(maskedValue));
  t.is(maskConfigurationText(null), null);
});

test("a __proto__ key stays an ordinary property when masked", (t) => {
  const parsed = JSON.parse('{"__proto__": {"token": "x"}, "a": 1}') as Record<string, unknown>;
  const masked = maskSecrets(parsed as never) as Record<string, unknown>;
  t.true(Object.hasOwn(masked, "__proto__"));
  t.is(Object.getPrototypeOf(masked), Object.prototype);
  t.is(JSON.stringify(masked), '{"__proto__":{"token":"***"},"a":1}');
});

test("an update that sends the mask back keeps the stored secret at the same path", (t) => {
  const stored = { password: "old-pass", list: [{ token: "t0" }, { token: "t1" }], auth: { user: "u", pass: "p" }, host: "a" };
  const incoming = {
    password: maskedValue,
    list: [{ token: maskedValue }, { token: "new-t1" }],
    auth: { user: maskedValue, pass: maskedValue },
    host: "b",
  };
  const kept = keepStoredSecrets(incoming, stored);
  t.deepEqual(kept.unmatched, []);
  t.deepEqual(kept.value, {
    password: "old-pass",
    list: [{ token: "t0" }, { token: "new-t1" }],
    auth: { user: "u", pass: "p" },
    host: "b",
  });
});

test("the mask outside a secret key is an ordinary string; a mask with nothing stored is reported by path", (t) => {
  const kept = keepStoredSecrets({ note: maskedValue, password: maskedValue, deep: [{ apiKey: maskedValue }] }, { note: "x" });
  t.is((kept.value as Record<string, unknown>).note, maskedValue);
  t.deepEqual(kept.unmatched, ["password", "deep[0].apiKey"]);
  t.deepEqual(keepStoredSecrets({ token: maskedValue }, undefined).unmatched, ["token"], "a create has nothing stored");
});

test("nesting depth is bounded without walking further than the bound", (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 40; i++) deep = [deep];
  t.true(nestsDeeperThan(deep as never, 32));
  t.false(nestsDeeperThan({ a: { b: [1, 2, { c: 3 }] } }, 32));
  t.true(nestsDeeperThan({ a: { b: {} } }, 2));
  t.false(nestsDeeperThan({ a: { b: 1 } }, 2));
});
