import test from "ava";
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { createHubConnectionTokens } from "./connection-tokens.js";

const key = randomBytes(32);
const hub = "/hubs/agent";

async function code(promise: Promise<unknown>): Promise<Code | undefined> {
  try {
    await promise;
    return undefined;
  } catch (e) {
    return ConnectError.from(e).code;
  }
}

test("an issued token is admitted by any instance with the key, for its hub only", async (t) => {
  const a = createHubConnectionTokens({ keys: () => [key] });
  const b = createHubConnectionTokens({ keys: async () => [key] });
  const issued = await a.connect({ hub, connectionToken: "" });
  t.regex(issued.connectionToken, /^[A-Za-z0-9._~-]+$/);
  t.deepEqual(await b.connect({ hub, connectionToken: issued.connectionToken }), issued);
  t.is(await code(b.connect({ hub: "/hubs/events", connectionToken: issued.connectionToken })), Code.NotFound);
  const other = createHubConnectionTokens({ keys: () => [randomBytes(32)] });
  t.is(await code(other.connect({ hub, connectionToken: issued.connectionToken })), Code.NotFound);
});

test("tampered, malformed and expired tokens are refused; a rotated key still admits its tokens", async (t) => {
  let now = 1_700_000_000_000;
  const tokens = createHubConnectionTokens({ keys: () => [key], maxAgeSeconds: 60, now: () => now });
  const { connectionToken, connectionId } = await tokens.connect({ hub, connectionToken: "" });
  const [id, issuedAt, mac] = connectionToken.split(".") as [string, string, string];
  const otherId = randomBytes(16).toString("base64url");
  t.is(await code(tokens.connect({ hub, connectionToken: `${otherId}.${issuedAt}.${mac}` })), Code.NotFound);
  t.is(
    await code(tokens.connect({ hub, connectionToken: `${id}.${(Number.parseInt(issuedAt, 36) + 1).toString(36)}.${mac}` })),
    Code.NotFound,
  );
  t.is(await code(tokens.connect({ hub, connectionToken: "garbage" })), Code.NotFound);
  now += 59_000;
  t.is((await tokens.connect({ hub, connectionToken })).connectionId, connectionId);
  const rotated = createHubConnectionTokens({ keys: () => [randomBytes(32), key], maxAgeSeconds: 60, now: () => now });
  t.is((await rotated.connect({ hub, connectionToken })).connectionId, connectionId);
  now += 2_000;
  t.is(await code(tokens.connect({ hub, connectionToken })), Code.NotFound);
});

test("no key yet: Unavailable, not an unsigned token", async (t) => {
  const tokens = createHubConnectionTokens({ keys: () => [] });
  t.is(await code(tokens.connect({ hub, connectionToken: "" })), Code.Unavailable);
});
