// Signing against the Standard Webhooks specification's published example (its signature was
// also recomputed with `openssl dgst -sha256 -mac HMAC`), and against the reference verifier.
import test from "ava";
import { Webhook } from "standardwebhooks";
import { decodeSecret, sign, webhookHeaders } from "./signing.js";

const specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const specId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const specTimestamp = "1614265330";
const specBody = '{"test": 2432232314}';
const specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

test("the specification's example signs to its published signature", (t) => {
  t.is(sign(decodeSecret(specSecret)!, specId, specTimestamp, specBody), specSignature);
});

test("the whsec_ prefix is optional and the key is the base64-decoded rest", (t) => {
  t.deepEqual(decodeSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), decodeSecret(specSecret));
  t.is(decodeSecret(specSecret)!.length, 24);
});

test("secrets that are not base64 are refused", (t) => {
  for (const bad of ["", "whsec_", "whsec_not base64!", "whsec_abc$"]) t.is(decodeSecret(bad), undefined, bad);
});

test("headers verify with the standardwebhooks package, and a changed body does not", (t) => {
  const body = JSON.stringify({ type: "speed_alert", timestamp: new Date().toISOString(), data: { id: "x" } });
  const now = Math.floor(Date.now() / 1000);
  const headers = webhookHeaders("msg_1", now, body, decodeSecret(specSecret));
  const verifier = new Webhook(specSecret);
  t.deepEqual(verifier.verify(body, { ...headers }), JSON.parse(body));
  t.throws(() => verifier.verify(body.replace("speed_alert", "geofence_breach"), { ...headers }));
});

test("without a key the id and timestamp still go out, unsigned", (t) => {
  t.deepEqual(webhookHeaders("msg_2", 1700000000, "{}", undefined), { "webhook-id": "msg_2", "webhook-timestamp": "1700000000" });
});
