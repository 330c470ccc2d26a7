import { generateKeyPairSync } from "node:crypto";
import test from "ava";
import { uuidv7 } from "../domain/ids.js";
import { LEEWAY_SECONDS, signAccessToken, signingKeyOf, thumbprintOf, verifyAccessToken } from "./jwt.js";

const key = signingKeyOf(generateKeyPairSync("ed25519").privateKey);
const other = signingKeyOf(generateKeyPairSync("ed25519").privateKey);
const now = 1_800_000_000;
const claims = { sub: "a", role: "user", sid: "s", iss: "iss", aud: "aud", iat: now, exp: now + 60 };
const options = { keys: new Map([[key.kid, key.publicKey]]), issuer: "iss", audience: "aud", now };

test("a signed token verifies with its claims; the kid is the key's thumbprint", (t) => {
  const token = signAccessToken(key, { ...claims, jti: "j" });
  t.deepEqual(verifyAccessToken(token, options), { ...claims, jti: "j" });
  t.is(key.kid, thumbprintOf(key.publicKey));
  t.regex(key.kid, /^[A-Za-z0-9_-]{43}$/);
});

test("expiry and issue time are checked with the leeway, issuer and audience exactly", (t) => {
  const token = signAccessToken(key, claims);
  t.truthy(verifyAccessToken(token, { ...options, now: now + 60 + LEEWAY_SECONDS - 1 }));
  t.is(verifyAccessToken(token, { ...options, now: now + 60 + LEEWAY_SECONDS }), undefined);
  t.is(verifyAccessToken(token, { ...options, now: now - LEEWAY_SECONDS - 1 }), undefined);
  t.is(verifyAccessToken(token, { ...options, issuer: "x" }), undefined);
  t.is(verifyAccessToken(token, { ...options, audience: "x" }), undefined);
});

test("another key, another kid, a changed header or payload, or junk never verify", (t) => {
  const token = signAccessToken(key, claims);
  const [h, p, s] = token.split(".") as [string, string, string];
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const header = JSON.parse(Buffer.from(h, "base64url").toString()) as Record<string, unknown>;
  const foreign = signAccessToken({ ...other, kid: key.kid }, claims);
  for (const bad of [
    foreign,
    signAccessToken(other, claims),
    `${b64({ ...header, alg: "none" })}.${p}.`,
    `${b64({ ...header, alg: "HS256" })}.${p}.${s}`,
    `${b64({ ...header, typ: "JWT" })}.${p}.${s}`,
    `${h}.${b64({ ...claims, role: "admin" })}.${s}`,
    `${h}.${p}`,
    `${h}.${p}.${s}.x`,
    "",
    "a.b.c",
  ]) {
    t.is(verifyAccessToken(bad, options), undefined, bad.slice(0, 40));
  }
});

test("only Ed25519 keys sign", (t) => {
  t.throws(() => signingKeyOf(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey), { message: /Ed25519/ });
});

test("UUIDv7 ids carry their time and sort by it", (t) => {
  const a = uuidv7(1_700_000_000_000);
  const b = uuidv7(1_700_000_000_001);
  t.regex(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.true(a < b);
  t.is(Number.parseInt(a.replace(/-/g, "").slice(0, 12), 16), 1_700_000_000_000);
});
