// The agent front's keys at start: which keys are refused, and that no refusal shows the key.
import test from "ava";
import { ConfigError } from "../runtime/config/index.js";
import { agentRoles, agentsAuth, type FrontSettings, weakKeyProblem } from "./front-settings.js";

const settings = (enabled: boolean, apiKeys: { key: string; name: string; role: "user" | "operator" | "admin" }[]) =>
  ({ gateway: { auth: { enabled, apiKeys, allowAnonymousPublicBind: false } } }) as unknown as FrontSettings;

test("weak keys", (t) => {
  for (const weak of [
    "",
    "short",
    "x".repeat(40),
    "ChangeMe-0123456789abc",
    "xx-your-api-key-xxxxxxxx",
    "PLACEHOLDER-123456789",
    "example-1234567890ab",
  ]) {
    t.truthy(weakKeyProblem(weak), weak);
  }
  t.is(weakKeyProblem("k3y-5f0c1e9a7b3d4c2e"), undefined);
});

test("auth on: keys become an API-key store ranked user < operator < admin; the bad one is named by index", (t) => {
  t.deepEqual(agentsAuth(settings(false, [])), {});
  const auth = agentsAuth(settings(true, [{ key: "k3y-5f0c1e9a7b3d4c2e", name: "ops", role: "operator" }]));
  t.deepEqual(auth.apiKeys?.roles, agentRoles);
  t.deepEqual(auth.apiKeys?.store.lookup("k3y-5f0c1e9a7b3d4c2e"), { name: "ops", role: "operator" });
  const none = t.throws(() => agentsAuth(settings(true, [])), { instanceOf: ConfigError });
  t.regex(none!.message, /Gateway:Auth:ApiKeys/);
  const bad = t.throws(
    () =>
      agentsAuth(
        settings(true, [
          { key: "k3y-5f0c1e9a7b3d4c2e", name: "a", role: "admin" },
          { key: "example-key-1234567890", name: "b", role: "user" },
        ]),
      ),
    { instanceOf: ConfigError },
  );
  t.regex(bad!.message, /Gateway:Auth:ApiKeys:1:Key/);
  t.false(bad!.message.includes("example-key-1234567890"));
});
