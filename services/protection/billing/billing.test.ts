// The billing client against a fake processor speaking Stripe's wire protocol on loopback, and the
// webhook check against signatures made as Stripe makes them (test/support/fake-stripe.ts).
import test from "ava";
import { createServer } from "node:net";
import { decodeStripeForm, type FakeStripe, signStripeWebhook, startFakeStripe } from "../../../test/support/fake-stripe.js";
import {
  createStripeClient,
  encodeForm,
  InvalidSignatureError,
  PaymentFailedError,
  ProcessorError,
  ProcessorUnavailableError,
  readSubscription,
  verifyStripeSignature,
} from "./index.js";

let fake: FakeStripe;
test.before(async () => {
  fake = await startFakeStripe();
});
test.after.always(async () => {
  await fake?.close();
});

const client = () => createStripeClient({ baseUrl: fake.url, secretKey: fake.secretKey });

test.serial("subscribe: customer, attach, subscription with error_if_incomplete; then cancel at period end", async (t) => {
  fake.requests.length = 0;
  const stripe = client();
  const customer = await stripe.createCustomer(
    { email: "a@example.org", metadata: { account_id: "acc 1" } },
    { idempotencyKey: "customer:acc1" },
  );
  t.regex(customer.id, /^cus_/);
  t.deepEqual(await stripe.attachPaymentMethod("pm_card_visa", customer.id), { id: "pm_card_visa", customer: customer.id });
  const subscription = await stripe.createSubscription({
    customerId: customer.id,
    priceId: "price_standard",
    paymentMethodId: "pm_card_visa",
  });
  t.regex(subscription.id, /^sub_/);
  t.like(subscription, { customer: customer.id, status: "active", priceId: "price_standard", cancelAtPeriodEnd: false });
  t.true(subscription.currentPeriodStart instanceof Date);
  t.is(subscription.currentPeriodEnd!.getTime() - subscription.currentPeriodStart!.getTime(), 30 * 24 * 3600 * 1000);
  const cancelled = await stripe.cancelAtPeriodEnd(subscription.id);
  t.like(cancelled, { id: subscription.id, status: "active", cancelAtPeriodEnd: true });

  t.deepEqual(
    fake.requests.map((r) => `${r.method} ${r.path}`),
    [
      "POST /v1/customers",
      "POST /v1/payment_methods/pm_card_visa/attach",
      "POST /v1/subscriptions",
      `POST /v1/subscriptions/${subscription.id}`,
    ],
  );
  for (const request of fake.requests) {
    t.is(request.authorization, `Bearer ${fake.secretKey}`);
    t.is(request.contentType, "application/x-www-form-urlencoded");
    t.truthy(request.idempotencyKey);
  }
  t.is(new Set(fake.requests.map((r) => r.idempotencyKey)).size, 4, "a fresh key for each operation");
  t.is(fake.requests[0]!.idempotencyKey, "customer:acc1");
  t.deepEqual(fake.requests[0]!.form, { email: "a@example.org", metadata: { account_id: "acc 1" } });
  t.deepEqual(fake.requests[1]!.form, { customer: customer.id });
  const create = fake.requests[2]!;
  t.true(create.body.includes("items[0][price]=price_standard"), create.body);
  t.deepEqual(create.form, {
    customer: customer.id,
    items: [{ price: "price_standard" }],
    default_payment_method: "pm_card_visa",
    payment_behavior: "error_if_incomplete",
  });
  t.deepEqual(fake.requests[3]!.form, { cancel_at_period_end: "true" });
});

test.serial("a retried POST with the same Idempotency-Key gets the first answer", async (t) => {
  const stripe = client();
  const first = await stripe.createCustomer({}, { idempotencyKey: "same-key" });
  const again = await stripe.createCustomer({}, { idempotencyKey: "same-key" });
  t.is(again.id, first.id);
  t.not((await stripe.createCustomer({})).id, first.id);
});

test.serial("a declined card is PaymentFailed with the processor's status, at attach or at the first charge", async (t) => {
  const stripe = client();
  const customer = await stripe.createCustomer({});
  const atAttach = await t.throwsAsync(() => stripe.attachPaymentMethod("pm_card_chargeDeclined", customer.id), {
    instanceOf: PaymentFailedError,
  });
  t.like(atAttach, { status: 402, code: "card_declined", declineCode: "generic_decline" });
  t.regex(atAttach!.message, /declined the payment \(402 card_declined\): Your card was declined\./);
  await stripe.attachPaymentMethod("pm_card_chargeCustomerFail", customer.id);
  const atCharge = await t.throwsAsync(
    () => stripe.createSubscription({ customerId: customer.id, priceId: "price_standard", paymentMethodId: "pm_card_chargeCustomerFail" }),
    { instanceOf: PaymentFailedError },
  );
  t.like(atCharge, { status: 402, declineCode: "insufficient_funds" });
});

test.serial("5xx and an unreachable or silent processor are ProcessorUnavailable", async (t) => {
  const stripe = client();
  fake.unavailable = 503;
  try {
    const err = await t.throwsAsync(() => stripe.createCustomer({}), { instanceOf: ProcessorUnavailableError });
    t.is(err?.status, 503);
    fake.unavailable = 500;
    await t.throwsAsync(() => stripe.cancelAtPeriodEnd("sub_x"), {
      instanceOf: ProcessorUnavailableError,
      message: /answered 500 \(POST \/v1\/subscriptions\/sub_x\)/,
    });
  } finally {
    fake.unavailable = undefined;
  }
  // A port nobody listens on.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const unreachable = createStripeClient({ baseUrl: `http://127.0.0.1:${port}`, secretKey: fake.secretKey });
  const err = await t.throwsAsync(() => unreachable.createCustomer({}), { instanceOf: ProcessorUnavailableError, message: /unreachable/ });
  t.is(err?.status, undefined);
  // A processor that accepts the connection and never answers.
  const silent = createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  try {
    const slow = createStripeClient({
      baseUrl: `http://127.0.0.1:${(silent.address() as { port: number }).port}`,
      secretKey: fake.secretKey,
      timeoutMs: 100,
    });
    await t.throwsAsync(() => slow.createCustomer({}), { instanceOf: ProcessorUnavailableError, message: /no answer within 100 ms/ });
  } finally {
    silent.close();
  }
});

test.serial("other refusals are ProcessorError with Stripe's type and code, and never carry the secret key", async (t) => {
  const wrongKey = "sk_test_wrongwrongwrong1234";
  const badKey = createStripeClient({ baseUrl: fake.url, secretKey: wrongKey });
  const unauthorised = await t.throwsAsync(() => badKey.createCustomer({}), { instanceOf: ProcessorError });
  t.like(unauthorised, { status: 401, type: "invalid_request_error" });
  t.false(unauthorised!.message.includes("1234"), "not even the part of the key the processor echoes");
  t.false(unauthorised!.message.includes("sk_test"));
  const missing = await t.throwsAsync(() => client().cancelAtPeriodEnd("sub_missing"), { instanceOf: ProcessorError });
  t.like(missing, { status: 404, code: "resource_missing" });
  t.is(
    missing!.message,
    "the payment processor refused POST /v1/subscriptions/sub_missing with 404 (invalid_request_error: resource_missing)",
  );
  const unknownCustomer = await t.throwsAsync(() => client().attachPaymentMethod("pm_card_visa", "cus_nobody"), {
    instanceOf: ProcessorError,
  });
  t.is(unknownCustomer?.status, 400);
  t.false(String(unknownCustomer?.message).includes(fake.secretKey));
});

test("encodeForm writes nested keys in brackets, escapes the rest, leaves out undefined and sends null empty", (t) => {
  const body = encodeForm({
    customer: "cus_1",
    items: [{ price: "price_a" }, { price: "price_b", quantity: 2 }],
    metadata: { "account id": "a&b=c", note: "é ü" },
    cancel_at_period_end: true,
    description: null,
    skipped: undefined,
  });
  t.is(
    body,
    "customer=cus_1&items[0][price]=price_a&items[1][price]=price_b&items[1][quantity]=2&metadata[account%20id]=a%26b%3Dc&metadata[note]=%C3%A9%20%C3%BC&cancel_at_period_end=true&description=",
  );
  t.deepEqual(decodeStripeForm(body), {
    customer: "cus_1",
    items: [{ price: "price_a" }, { price: "price_b", quantity: "2" }],
    metadata: { "account id": "a&b=c", note: "é ü" },
    cancel_at_period_end: "true",
    description: "",
  });
});

test("readSubscription reads the period from the subscription or, in newer API versions, from its item", (t) => {
  const old = readSubscription({
    id: "sub_1",
    customer: "cus_1",
    status: "past_due",
    current_period_start: 1_700_000_000,
    current_period_end: 1_702_592_000,
    items: { data: [{ price: { id: "price_a" } }] },
  });
  t.like(old, { id: "sub_1", customer: "cus_1", status: "past_due", priceId: "price_a", cancelAtPeriodEnd: false });
  t.is(old.currentPeriodEnd?.toISOString(), "2023-12-14T22:13:20.000Z");
  const basil = readSubscription({
    id: "sub_2",
    customer: { id: "cus_2" },
    status: "canceled",
    cancel_at_period_end: true,
    items: { data: [{ price: { id: "price_b" }, current_period_start: 1_700_000_000, current_period_end: 1_702_592_000 }] },
  });
  t.like(basil, { customer: "cus_2", status: "canceled", priceId: "price_b", cancelAtPeriodEnd: true });
  t.is(basil.currentPeriodStart?.toISOString(), "2023-11-14T22:13:20.000Z");
  t.like(readSubscription({ id: "sub_3" }), { currentPeriodStart: null, currentPeriodEnd: null, priceId: null });
});

// --- webhook signatures ---

const secret = "whsec_test_0123456789abcdefghij";
const body = JSON.stringify({ id: "evt_1", type: "invoice.paid", data: { object: { id: "in_1", subscription: "sub_1" } } });
const at = new Date("2025-06-01T12:00:00Z");

test("a body signed as Stripe signs it verifies, also among other v1 and v0 signatures", (t) => {
  const header = signStripeWebhook(body, secret, at);
  t.deepEqual(verifyStripeSignature(header, body, secret, 300, at), at);
  t.deepEqual(verifyStripeSignature(header, Buffer.from(body), secret, 300, new Date(at.getTime() + 300_000)), at, "at the tolerance");
  const t0 = Math.floor(at.getTime() / 1000);
  const other = signStripeWebhook(body, "whsec_old_secret", at).split(",")[1]!;
  const mine = header.split(",")[1]!;
  t.notThrows(() => verifyStripeSignature(`t=${t0},${other},${mine},v0=${"0".repeat(64)}`, body, secret, 300, at));
  t.notThrows(() => verifyStripeSignature(`t=${t0}, ${mine}, ${other}`, body, secret, 300, at));
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80]);
  t.notThrows(() => verifyStripeSignature(signStripeWebhook(binary, secret, at), binary, secret, 300, at), "raw bytes, not text");
});

test("each way a signature fails is InvalidSignature, and no message carries the secret or a signature", (t) => {
  const header = signStripeWebhook(body, secret, at);
  const v1 = header.split("v1=")[1]!;
  const t0 = Math.floor(at.getTime() / 1000);
  const cases: [string, string | undefined, string, Date, RegExp][] = [
    ["missing header", undefined, body, at, /missing/],
    ["empty header", "", body, at, /missing/],
    ["no timestamp", `v1=${v1}`, body, at, /no valid timestamp/],
    ["timestamp not a number", `t=soon,v1=${v1}`, body, at, /no valid timestamp/],
    ["no v1", `t=${t0},v0=${v1}`, body, at, /no v1 signature/],
    ["v1 not hex", `t=${t0},v1=zz${v1.slice(2)}`, body, at, /no v1 signature/],
    ["body changed", header, body.replace("in_1", "in_2"), at, /matches/],
    ["another secret", signStripeWebhook(body, "whsec_other", at), body, at, /matches/],
    ["timestamp changed", `t=${t0 + 1},v1=${v1}`, body, at, /matches/],
    ["too old", header, body, new Date(at.getTime() + 301_000), /more than 300 s/],
    ["from the future", header, body, new Date(at.getTime() - 301_000), /more than 300 s/],
  ];
  for (const [label, h, b, now, message] of cases) {
    const err = t.throws(() => verifyStripeSignature(h, b, secret, 300, now), { instanceOf: InvalidSignatureError }, label);
    t.regex(err?.message ?? "", message, label);
    t.false(err?.message.includes(secret), label);
    t.false(err?.message.includes(v1), label);
  }
  t.throws(() => verifyStripeSignature(header, body, "", 300, at), { instanceOf: TypeError });
});
