// Hosted billing end to end through the REST front with fetch, against a fake processor speaking
// Stripe's wire protocol on loopback (test/support/fake-stripe.ts): subscribe (customer once,
// attach, subscription with error_if_incomplete), every refusal (409, 402, 503 with Retry-After,
// 404 NO_ACTIVE_SUBSCRIPTION, 400), status and cancel, the webhook with signatures made here with
// node:crypto (each failure, each event id once), the subscription.updated event, no secret in
// any log line, and billing off: 404 BILLING_DISABLED.
import { createHmac } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { SubscriptionUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import { protectionSettings } from "../../services/protection/settings.js";
import { loadMeshConfig } from "../../services/mesh-config.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { watchStream } from "../support/event-watch.js";
import { type FakeStripe, startFakeStripe } from "../support/fake-stripe.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

interface Status {
  subscription_id: string | null;
  plan: string | null;
  status: string | null;
  current_period_start: string | null;
  current_period_end: string | null;
  cancel_at_period_end: boolean;
  has_subscription: boolean;
}

const WEBHOOK_SECRET = "whsec_test_0123456789abcdefghijklmnop";
const logLines: string[] = [];
let fake: FakeStripe;
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;

test.before(async () => {
  fake = await startFakeStripe();
  mesh = await startTestMesh({
    flags: [
      "--Protection:Billing:Enabled=true",
      `--Protection:Billing:ProcessorUrl=${fake.url}`,
      `--Protection:Billing:SecretKey=${fake.secretKey}`,
      `--Protection:Billing:WebhookSecret=${WEBHOOK_SECRET}`,
      "--Protection:Billing:Prices:Standard=price_standard",
      "--Protection:Billing:Prices:PartnerTier=price_partner",
      "--Protection:Billing:Prices:Institutional=price_institutional",
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      "--Logging:Level=debug",
    ],
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
  });
  api = protectionClient(mesh.frontUrl("protection"));
});

test.after.always(async () => {
  await mesh?.close();
  await fake?.close();
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, what = "") => {
  t.is(res.status, status, `${what} ${JSON.stringify(res.body)}`);
  t.is((res.body as ErrorBody).error, code, what);
  t.is(typeof (res.body as ErrorBody).message, "string", what);
};

const account = async () => {
  const email = freshEmail("payer");
  const { account_id } = await api.register(email, "Payer");
  return { id: account_id, token: (await api.login(email)).access_token };
};

/** A signature as Stripe makes it: t=<seconds>,v1=<hex HMAC-SHA256 of "t.body"> with the whole whsec_ secret. */
const sign = (body: string, secret = WEBHOOK_SECRET, at = Date.now()) => {
  const t = Math.floor(at / 1000);
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
};

const webhook = (body: string, signature: string | undefined) =>
  fetch(`${mesh.frontUrl("protection")}/v1/billing/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(signature === undefined ? {} : { "stripe-signature": signature }) },
    body,
  });

let eventSeq = 0;
const event = (type: string, object: Record<string, unknown>) =>
  JSON.stringify({ id: `evt_${++eventSeq}_${Date.now()}`, object: "event", type, data: { object } });

test.serial("status before any subscription: nulls; cancel 404 NO_ACTIVE_SUBSCRIPTION; bearer required", async (t) => {
  const { token } = await account();
  const status = await api.authed<Status>(token, "GET", "/v1/billing/status");
  t.is(status.status, 200);
  t.deepEqual(status.body, {
    subscription_id: null,
    plan: null,
    status: null,
    current_period_start: null,
    current_period_end: null,
    cancel_at_period_end: false,
    has_subscription: false,
  });
  expectError(t, await api.authed(token, "POST", "/v1/billing/cancel"), 404, "NO_ACTIVE_SUBSCRIPTION");
  expectError(t, await api.call("GET", "/v1/billing/status"), 401, "UNAUTHORIZED");
  expectError(
    t,
    await api.call("POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "pm_card_visa" }),
    401,
    "UNAUTHORIZED",
  );
});

test.serial("subscribe: customer once, attach, subscription with error_if_incomplete; 409 SUBSCRIPTION_EXISTS; event", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.subscription.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const payer = await account();
  fake.requests.length = 0;
  const res = await api.authed<Status>(payer.token, "POST", "/v1/billing/subscribe", {
    plan: "partner_tier",
    payment_method_id: "pm_card_visa",
  });
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body).sort(), [
    "cancel_at_period_end",
    "current_period_end",
    "current_period_start",
    "plan",
    "status",
    "subscription_id",
  ]);
  t.like(res.body, { plan: "partner_tier", status: "active", cancel_at_period_end: false });
  t.regex(res.body.subscription_id!, /^sub_/);
  t.deepEqual(
    fake.requests.map((r) => `${r.method} ${r.path}`),
    ["POST /v1/customers", "POST /v1/payment_methods/pm_card_visa/attach", "POST /v1/subscriptions"],
  );
  for (const r of fake.requests) {
    t.is(r.authorization, `Bearer ${fake.secretKey}`);
    t.is(r.contentType, "application/x-www-form-urlencoded");
    t.truthy(r.idempotencyKey);
  }
  const customer = String(fake.requests[0]!.form.metadata && (fake.requests[0]!.form.metadata as Record<string, string>).account_id);
  t.is(customer, payer.id);
  t.like(fake.requests[2]!.form, {
    items: [{ price: "price_partner" }],
    default_payment_method: "pm_card_visa",
    payment_behavior: "error_if_incomplete",
  });

  const status = await api.authed<Status>(payer.token, "GET", "/v1/billing/status");
  t.deepEqual(status.body, { ...res.body, has_subscription: true });
  expectError(
    t,
    await api.authed(payer.token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "pm_card_visa" }),
    409,
    "SUBSCRIPTION_EXISTS",
  );
  const seen = await until(() => watch.seen.find((e) => e.subject === "protection.v1.subscription.updated"), "subscription.updated");
  t.like(fromBinary(SubscriptionUpdatedSchema, seen.data), {
    accountId: payer.id,
    subscriptionId: res.body.subscription_id!,
    plan: "partner_tier",
    status: "active",
  });

  // Cancel: at period end, the status shape.
  fake.requests.length = 0;
  const cancelled = await api.authed<Status>(payer.token, "POST", "/v1/billing/cancel");
  t.is(cancelled.status, 200, cancelled.text);
  t.like(cancelled.body, {
    subscription_id: res.body.subscription_id,
    status: "active",
    cancel_at_period_end: true,
    has_subscription: true,
  });
  t.deepEqual(
    fake.requests.map((r) => [`${r.method} ${r.path}`, r.form]),
    [[`POST /v1/subscriptions/${res.body.subscription_id}`, { cancel_at_period_end: "true" }]],
  );
});

test.serial("subscribe refusals: 400, 402 PAYMENT_FAILED, 503 with Retry-After; the customer is made once", async (t) => {
  const payer = await account();
  for (const body of [
    { plan: "gold", payment_method_id: "pm_card_visa" },
    { plan: "standard", payment_method_id: "" },
    { plan: "standard", payment_method_id: "pm card" },
    { plan: "standard" },
  ]) {
    expectError(t, await api.authed(payer.token, "POST", "/v1/billing/subscribe", body), 400, "VALIDATION_ERROR", JSON.stringify(body));
  }
  expectError(
    t,
    await api.authed(payer.token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "card_unknown" }),
    400,
    "VALIDATION_ERROR",
    "a payment method the processor does not know",
  );
  fake.requests.length = 0;
  for (const pm of ["pm_card_chargeDeclined", "pm_card_chargeCustomerFail"]) {
    const declined = await api.authed<ErrorBody>(payer.token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: pm });
    expectError(t, declined, 402, "PAYMENT_FAILED", pm);
  }
  t.is(fake.requests.filter((r) => r.path === "/v1/customers").length, 0, "the customer was made once, at the first call");

  fake.unavailable = 503;
  t.teardown(() => {
    fake.unavailable = undefined;
  });
  const down = await api.authed(payer.token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "pm_card_visa" });
  expectError(t, down, 503, "PAYMENT_PROCESSOR_UNAVAILABLE");
  t.regex(down.headers.get("retry-after") ?? "", /^\d+$/);
  fake.unavailable = undefined;

  const status = await api.authed<Status>(payer.token, "GET", "/v1/billing/status");
  t.is(status.body.has_subscription, false);
  const ok = await api.authed<Status>(payer.token, "POST", "/v1/billing/subscribe", {
    plan: "institutional",
    payment_method_id: "pm_card_visa",
  });
  t.is(ok.status, 201, ok.text);
  t.is(ok.body.plan, "institutional");
  for (const line of logLines) {
    t.false(line.includes(fake.secretKey), "the secret key is never logged");
    t.false(line.includes(WEBHOOK_SECRET), "the webhook secret is never logged");
  }
});

test.serial("webhook: each signature failure is 400 INVALID_SIGNATURE; events applied once; deleted → cancelled", async (t) => {
  const payer = await account();
  const sub = await api.authed<Status>(payer.token, "POST", "/v1/billing/subscribe", {
    plan: "standard",
    payment_method_id: "pm_card_visa",
  });
  t.is(sub.status, 201);
  const id = sub.body.subscription_id!;
  const object = { ...fake.subscriptions.get(id)! };

  const body = event("invoice.payment_failed", { id: "in_1", object: "invoice", parent: { subscription_details: { subscription: id } } });
  const old = Date.now() - 301_000;
  const tamperedBody = body.replace("payment_failed", "paid");
  const forged = [
    ["no header", undefined],
    ["malformed header", "garbage"],
    ["no v1", `t=${Math.floor(Date.now() / 1000)}`],
    ["another secret", sign(body, "whsec_other_secret")],
    ["too old", sign(body, WEBHOOK_SECRET, old)],
    ["too far ahead", sign(body, WEBHOOK_SECRET, Date.now() + 301_000)],
    ["another body", sign(tamperedBody)],
  ] as const;
  for (const [what, header] of forged) {
    const res = await webhook(body, header);
    t.is(res.status, 400, what);
    t.is(((await res.json()) as ErrorBody).error, "INVALID_SIGNATURE", what);
  }
  t.is((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body.status, "active", "nothing applied");

  // Any v1 may match (a secret being rolled): the good one second.
  const good = sign(body);
  const [stamp, v1] = good.split(",");
  const res = await webhook(body, `${stamp},v1=${"0".repeat(64)},${v1}`);
  t.is(res.status, 200, await res.clone().text());
  t.deepEqual(await res.json(), { received: true });
  t.like((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body, { status: "past_due", has_subscription: true });

  const paid = event("invoice.paid", { id: "in_2", object: "invoice", subscription: id });
  t.is((await webhook(paid, sign(paid))).status, 200);
  t.like((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body, { status: "active" });

  // The same event id again is not applied again.
  const failedAgain = body;
  t.is((await webhook(failedAgain, sign(failedAgain))).status, 200);
  t.like((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body, { status: "active" }, "each event id once");

  const ignored = event("charge.succeeded", { id: "ch_1", object: "charge" });
  t.deepEqual(await (await webhook(ignored, sign(ignored))).json(), { received: true });

  const updated = event("customer.subscription.updated", { ...object, cancel_at_period_end: true, status: "active" });
  t.is((await webhook(updated, sign(updated))).status, 200);
  t.like((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body, { cancel_at_period_end: true, status: "active" });

  const deleted = event("customer.subscription.deleted", { ...object, status: "canceled" });
  t.is((await webhook(deleted, sign(deleted))).status, 200);
  t.like((await api.authed<Status>(payer.token, "GET", "/v1/billing/status")).body, {
    subscription_id: id,
    plan: "standard",
    status: "cancelled",
    has_subscription: false,
  });
  expectError(t, await api.authed(payer.token, "POST", "/v1/billing/cancel"), 404, "NO_ACTIVE_SUBSCRIPTION");

  const notJson = "not json";
  t.is((await webhook(notJson, sign(notJson))).status, 400);
});

test.serial("billing off: every billing path 404 BILLING_DISABLED; SVC_BILLING_ENABLED turns it on", async (t) => {
  const off = await startTestMesh();
  t.teardown(() => off.close());
  const client = protectionClient(off.frontUrl("protection"));
  const email = freshEmail("selfhost");
  await client.register(email, "Self");
  const token = (await client.login(email)).access_token;
  expectError(t, await client.authed(token, "GET", "/v1/billing/status"), 404, "BILLING_DISABLED");
  expectError(t, await client.authed(token, "POST", "/v1/billing/cancel"), 404, "BILLING_DISABLED");
  expectError(
    t,
    await client.authed(token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "pm_card_visa" }),
    404,
    "BILLING_DISABLED",
  );
  const body = event("invoice.paid", { id: "in_9" });
  const hook = await fetch(`${off.frontUrl("protection")}/v1/billing/webhook`, {
    method: "POST",
    body,
    headers: { "stripe-signature": sign(body) },
  });
  t.is(hook.status, 404);
  t.is(((await hook.json()) as ErrorBody).error, "BILLING_DISABLED");

  const config = loadMeshConfig({ env: { SVC_BILLING_ENABLED: "true" }, flags: [] });
  t.true(config.get(protectionSettings).protection.billing.enabled);
  t.false(loadMeshConfig({ env: {}, flags: [] }).get(protectionSettings).protection.billing.enabled);
});

test.serial("a processor that cannot be reached: 503 PAYMENT_PROCESSOR_UNAVAILABLE with Retry-After", async (t) => {
  // A port that was just free: nothing listens there.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const away = await startTestMesh({
    flags: [
      "--Protection:Billing:Enabled=true",
      `--Protection:Billing:ProcessorUrl=http://127.0.0.1:${port}`,
      `--Protection:Billing:SecretKey=${fake.secretKey}`,
      `--Protection:Billing:WebhookSecret=${WEBHOOK_SECRET}`,
      "--Protection:Billing:Prices:Standard=price_standard",
      "--Protection:Billing:Prices:PartnerTier=price_partner",
      "--Protection:Billing:Prices:Institutional=price_institutional",
    ],
  });
  t.teardown(() => away.close());
  const client = protectionClient(away.frontUrl("protection"));
  const email = freshEmail("away");
  await client.register(email, "Away");
  const token = (await client.login(email)).access_token;
  const res = await client.authed(token, "POST", "/v1/billing/subscribe", { plan: "standard", payment_method_id: "pm_card_visa" });
  expectError(t, res, 503, "PAYMENT_PROCESSOR_UNAVAILABLE");
  t.regex(res.headers.get("retry-after") ?? "", /^\d+$/);
});
