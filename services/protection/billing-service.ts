// protection.v1.BillingService: hosted billing against a processor speaking Stripe's HTTP API
// (services/protection/billing). Subscribe makes the account's customer once (an idempotency key
// per account), attaches the payment method and creates the subscription while the account's row
// is locked, so two concurrent subscribes make one subscription. The webhook applies each event id
// once. Off (Protection:Billing:Enabled false), every rpc answers 404 BILLING_DISABLED.
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { HttpErrorStatusSchema } from "../../gen/meshwork/api/v1/options_pb.js";
import type { BillingService } from "../../gen/protection/v1/billing_pb.js";
import { SubscriptionUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import type { Transaction } from "../runtime/outbox/index.js";
import {
  createStripeClient,
  InvalidSignatureError,
  PaymentFailedError,
  ProcessorError,
  ProcessorUnavailableError,
  type ProcessorSubscription,
  readSubscription,
  type StripeClient,
  verifyStripeSignature,
} from "./billing/index.js";
import type { ProtectionDeps } from "./deps.js";
import { refusal, validationError } from "./errors.js";
import type { ProtectionSettings } from "./settings.js";
import { bearerOf } from "./tokens/token-service.js";

const DOMAIN = "protection.meshwork";
const PLANS = ["standard", "partner_tier", "institutional"] as const;
type Plan = (typeof PLANS)[number];
/** The statuses of a subscription the account has (and cannot subscribe again over). */
const LIVE = ["trialing", "active", "past_due"];
const RETRY_AFTER_SECONDS = "30";

type BillingSettings = ProtectionSettings["protection"]["billing"];

interface SubscriptionRow {
  id: string;
  account_id: string;
  customer_id: string;
  plan: Plan;
  status: string;
  current_period_start: Date | string | null;
  current_period_end: Date | string | null;
  cancel_at_period_end: boolean;
}

function sql<T = Record<string, unknown>>(em: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, "all", em.getTransactionContext());
}

/** The settings billing needs when it is on: refused at start rather than on a payer's request. */
export function checkBillingSettings(billing: BillingSettings): void {
  if (!billing.enabled) return;
  const missing = [
    ["SecretKey", billing.secretKey],
    ["WebhookSecret", billing.webhookSecret],
    ["Prices:Standard", billing.prices.standard],
    ["Prices:PartnerTier", billing.prices.partnerTier],
    ["Prices:Institutional", billing.prices.institutional],
  ]
    .filter(([, value]) => !value)
    .map(([name]) => `Protection:Billing:${name}`);
  if (missing.length > 0)
    throw new Error(`Protection:Billing:Enabled is true but ${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} not set`);
}

const disabled = () => refusal(Code.NotFound, "BILLING_DISABLED", "Billing is not enabled on this instance.");

/** Stripe says `canceled`; the interface says `cancelled`. */
const statusOf = (processorStatus: string) => (processorStatus === "canceled" ? "cancelled" : processorStatus);

const dateOf = (value: Date | string | null) => (value === null ? undefined : timestampFromDate(new Date(value)));

function shape(row: SubscriptionRow) {
  return {
    subscriptionId: row.id,
    plan: row.plan,
    status: row.status,
    currentPeriodStart: dateOf(row.current_period_start),
    currentPeriodEnd: dateOf(row.current_period_end),
    cancelAtPeriodEnd: row.cancel_at_period_end,
  };
}

function statusShape(row: SubscriptionRow | undefined) {
  if (!row) return { cancelAtPeriodEnd: false, hasSubscription: false };
  return { ...shape(row), hasSubscription: LIVE.includes(row.status) };
}

/** What a processor failure answers: 402, 503 with Retry-After, or (our fault) 503 too, logged. */
function processorRefusal(err: unknown, deps: ProtectionDeps, what: string): ConnectError {
  if (err instanceof PaymentFailedError) {
    return new ConnectError(err.message, Code.FailedPrecondition, undefined, [
      {
        desc: ErrorInfoSchema,
        value: {
          reason: "PAYMENT_FAILED",
          domain: DOMAIN,
          metadata: {
            processor_status: String(err.status),
            ...(err.code ? { code: err.code } : {}),
            ...(err.declineCode ? { decline_code: err.declineCode } : {}),
          },
        },
      },
      { desc: HttpErrorStatusSchema, value: { status: 402 } },
    ]);
  }
  if (err instanceof ProcessorUnavailableError) {
    deps.logger.warn({ err: err.message }, `payment processor unavailable (${what})`);
  } else if (err instanceof ProcessorError) {
    deps.logger.error({ err: err.message, status: err.status }, `payment processor refused a request (${what})`);
  } else {
    throw err;
  }
  return refusal(Code.Unavailable, "PAYMENT_PROCESSOR_UNAVAILABLE", "The payment processor is unavailable; try again later.", {
    "retry-after": RETRY_AFTER_SECONDS,
  });
}

async function latestSubscription(em: EntityManager, accountId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await sql<SubscriptionRow>(
    em,
    `select * from "protection_billing_subscription" where "account_id" = ? order by "created_at" desc, "id" desc limit 1`,
    [accountId],
  );
  return row;
}

async function saveSubscription(
  tx: Transaction,
  row: { id: string; accountId: string; customerId: string; plan: Plan },
  sub: ProcessorSubscription,
  status: string,
): Promise<SubscriptionRow> {
  const now = new Date();
  const [saved] = await sql<SubscriptionRow>(
    tx.em,
    `insert into "protection_billing_subscription"
       ("id", "account_id", "customer_id", "plan", "status", "current_period_start", "current_period_end", "cancel_at_period_end", "created_at", "updated_at")
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     on conflict ("id") do update set "status" = excluded."status",
       "current_period_start" = coalesce(excluded."current_period_start", "protection_billing_subscription"."current_period_start"),
       "current_period_end" = coalesce(excluded."current_period_end", "protection_billing_subscription"."current_period_end"),
       "cancel_at_period_end" = excluded."cancel_at_period_end", "updated_at" = excluded."updated_at"
     returning *`,
    [
      row.id,
      row.accountId,
      row.customerId,
      row.plan,
      status,
      sub.currentPeriodStart,
      sub.currentPeriodEnd,
      sub.cancelAtPeriodEnd,
      now,
      now,
    ],
  );
  recordUpdated(tx, saved!);
  return saved!;
}

function recordUpdated(tx: Transaction, row: SubscriptionRow) {
  tx.record(SubscriptionUpdatedSchema, {
    accountId: row.account_id,
    subscriptionId: row.id,
    plan: row.plan,
    status: row.status,
    cancelAtPeriodEnd: row.cancel_at_period_end,
  });
}

export function billingService(deps: ProtectionDeps, billing: BillingSettings, client?: StripeClient): ServiceImpl<typeof BillingService> {
  const stripe =
    client ?? (billing.enabled ? createStripeClient({ baseUrl: billing.processorUrl, secretKey: billing.secretKey ?? "" }) : undefined);
  const priceOf: Record<Plan, string> = {
    standard: billing.prices.standard ?? "",
    partner_tier: billing.prices.partnerTier ?? "",
    institutional: billing.prices.institutional ?? "",
  };
  const planOfPrice = (price: string | null): Plan | undefined => PLANS.find((p) => price !== null && priceOf[p] === price);

  const enabledStripe = (): StripeClient => {
    if (!billing.enabled || !stripe) throw disabled();
    return stripe;
  };

  /** The account's customer id, made at the processor the first time (one idempotency key per account). */
  async function customerOf(accountId: string, processor: StripeClient): Promise<string> {
    const em = deps.db.em();
    const [known] = await sql<{ customer_id: string }>(
      em,
      `select "customer_id" from "protection_billing_customer" where "account_id" = ?`,
      [accountId],
    );
    if (known) return known.customer_id;
    const customer = await processor.createCustomer({ metadata: { account_id: accountId } }, { idempotencyKey: `customer:${accountId}` });
    await sql(
      em,
      `insert into "protection_billing_customer" ("account_id", "customer_id", "created_at") values (?, ?, ?) on conflict ("account_id") do nothing`,
      [accountId, customer.id, new Date()],
    );
    const [row] = await sql<{ customer_id: string }>(em, `select "customer_id" from "protection_billing_customer" where "account_id" = ?`, [
      accountId,
    ]);
    return row!.customer_id;
  }

  return {
    async subscribe(req) {
      const processor = enabledStripe();
      const accountId = bearerOf(currentIdentity()).name;
      if (!(PLANS as readonly string[]).includes(req.plan)) throw validationError("plan", `plan must be one of ${PLANS.join(", ")}`);
      const plan = req.plan as Plan;
      const paymentMethodId = req.paymentMethodId.trim();
      if (!/^[A-Za-z0-9_]{1,255}$/.test(paymentMethodId)) {
        throw validationError("payment_method_id", "payment_method_id must be the processor's payment method id (pm_…)");
      }
      const live = await latestSubscription(deps.db.em(), accountId);
      if (live && LIVE.includes(live.status))
        throw refusal(Code.AlreadyExists, "SUBSCRIPTION_EXISTS", "The account already has a subscription.");
      let customerId: string;
      try {
        customerId = await customerOf(accountId, processor);
      } catch (err) {
        throw processorRefusal(err, deps, "create customer");
      }
      const saved = await deps.uow.run(async (tx) => {
        // One subscribe per account at a time: the second waits here and finds the first's.
        await sql(tx.em, `select 1 from "protection_account" where "id" = ? for update`, [accountId]);
        const again = await latestSubscription(tx.em, accountId);
        if (again && LIVE.includes(again.status)) {
          throw refusal(Code.AlreadyExists, "SUBSCRIPTION_EXISTS", "The account already has a subscription.");
        }
        let sub: ProcessorSubscription;
        try {
          await processor.attachPaymentMethod(paymentMethodId, customerId);
          sub = await processor.createSubscription({
            customerId,
            priceId: priceOf[plan],
            paymentMethodId,
            metadata: { account_id: accountId, plan },
          });
        } catch (err) {
          if (err instanceof ProcessorError && (err.status === 400 || err.status === 404) && err.code === "resource_missing") {
            throw validationError("payment_method_id", "The payment method is unknown to the payment processor.");
          }
          throw processorRefusal(err, deps, "subscribe");
        }
        return saveSubscription(tx, { id: sub.id, accountId, customerId, plan }, sub, statusOf(sub.status));
      });
      return shape(saved);
    },

    async getBillingStatus() {
      enabledStripe();
      const accountId = bearerOf(currentIdentity()).name;
      return statusShape(await latestSubscription(deps.db.em(), accountId));
    },

    async cancelSubscription() {
      const processor = enabledStripe();
      const accountId = bearerOf(currentIdentity()).name;
      const current = await latestSubscription(deps.db.em(), accountId);
      if (!current || !LIVE.includes(current.status)) {
        throw refusal(Code.NotFound, "NO_ACTIVE_SUBSCRIPTION", "The account has no active subscription.");
      }
      let sub: ProcessorSubscription;
      try {
        sub = await processor.cancelAtPeriodEnd(current.id, { idempotencyKey: `cancel:${current.id}` });
      } catch (err) {
        throw processorRefusal(err, deps, "cancel");
      }
      const saved = await deps.uow.run((tx) =>
        saveSubscription(tx, { id: current.id, accountId, customerId: current.customer_id, plan: current.plan }, sub, statusOf(sub.status)),
      );
      return statusShape(saved);
    },

    async receiveBillingWebhook(req, ctx: HandlerContext) {
      enabledStripe();
      const raw = req.body?.data ?? new Uint8Array();
      try {
        verifyStripeSignature(ctx.requestHeader.get("stripe-signature"), raw, billing.webhookSecret ?? "", billing.webhookToleranceSeconds);
      } catch (err) {
        if (err instanceof InvalidSignatureError) throw refusal(Code.InvalidArgument, "INVALID_SIGNATURE", err.message);
        throw err;
      }
      let event: { id?: unknown; type?: unknown; data?: { object?: Record<string, unknown> } };
      try {
        event = JSON.parse(Buffer.from(raw).toString("utf8"));
      } catch {
        throw validationError("body", "The webhook body is not JSON.");
      }
      if (typeof event?.id !== "string" || event.id === "" || typeof event.type !== "string") {
        throw validationError("body", "The webhook event has no id or type.");
      }
      const object = event.data?.object;
      const id = event.id;
      const type = event.type;
      await deps.uow.run(async (tx) => {
        const [fresh] = await sql(
          tx.em,
          `insert into "protection_billing_webhook_event" ("event_id", "type", "received_at") values (?, ?, ?)
           on conflict ("event_id") do nothing returning "event_id"`,
          [id, type, new Date()],
        );
        if (!fresh || typeof object !== "object" || object === null) return;
        await applyEvent(tx, type, object);
      });
      return { received: true };
    },
  };

  async function applyEvent(tx: Transaction, type: string, object: Record<string, unknown>): Promise<void> {
    if (type.startsWith("customer.subscription.") && ["created", "updated", "deleted"].includes(type.slice(22))) {
      const sub = readSubscription(object);
      const status = type === "customer.subscription.deleted" ? "cancelled" : statusOf(sub.status);
      const [known] = await sql<SubscriptionRow>(tx.em, `select * from "protection_billing_subscription" where "id" = ?`, [sub.id]);
      if (known) {
        await saveSubscription(
          tx,
          { id: known.id, accountId: known.account_id, customerId: known.customer_id, plan: known.plan },
          sub,
          status,
        );
        return;
      }
      // A subscription made elsewhere (the processor's dashboard): kept when its customer is an account's.
      const [customer] = await sql<{ account_id: string }>(
        tx.em,
        `select "account_id" from "protection_billing_customer" where "customer_id" = ?`,
        [sub.customer],
      );
      const plan = planOfPrice(sub.priceId);
      if (!customer || !plan) {
        deps.logger.info({ subscription: sub.id, type }, "billing webhook about a subscription of no known account or plan; ignored");
        return;
      }
      await saveSubscription(tx, { id: sub.id, accountId: customer.account_id, customerId: sub.customer, plan }, sub, status);
      return;
    }
    if (type === "invoice.paid" || type === "invoice.payment_failed") {
      const subscriptionId = invoiceSubscription(object);
      if (!subscriptionId) return;
      const [row] = await sql<SubscriptionRow>(
        tx.em,
        `update "protection_billing_subscription" set "status" = ?, "updated_at" = ? where "id" = ? returning *`,
        [type === "invoice.paid" ? "active" : "past_due", new Date(), subscriptionId],
      );
      if (row) recordUpdated(tx, row);
    }
  }
}

/** An invoice's subscription: `subscription` (before 2025-03-31) or `parent.subscription_details.subscription`. */
function invoiceSubscription(invoice: Record<string, unknown>): string | undefined {
  const direct = invoice.subscription;
  if (typeof direct === "string" && direct !== "") return direct;
  if (typeof direct === "object" && direct !== null && typeof (direct as { id?: unknown }).id === "string")
    return (direct as { id: string }).id;
  const parent = invoice.parent as { subscription_details?: { subscription?: unknown } } | undefined;
  const nested = parent?.subscription_details?.subscription;
  return typeof nested === "string" && nested !== "" ? nested : undefined;
}
