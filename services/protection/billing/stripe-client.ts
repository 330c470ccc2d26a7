// The payment processor as the billing rpcs use it: Stripe's HTTP API (or anything speaking its
// wire protocol) with a bearer secret key, form-encoded bodies and an Idempotency-Key on every POST.
import { randomUUID } from "node:crypto";
import { PaymentFailedError, ProcessorError, ProcessorUnavailableError } from "./errors.js";
import { encodeForm, type FormValue } from "./form.js";

export interface StripeClientOptions {
  /** `Protection:Billing:ProcessorUrl`, e.g. `https://api.stripe.com` (paths start with /v1). */
  baseUrl: string;
  /** `Protection:Billing:SecretKey`: sent as `Authorization: Bearer`, nowhere else. */
  secretKey: string;
  /** Per request, connection included; past it the processor counts as unavailable. Default 20 s. */
  timeoutMs?: number;
  /** Stripe-Version header to pin the API version; unset, the account's default. */
  apiVersion?: string;
  fetch?: typeof fetch;
}

/** What the billing rpcs read of a Stripe subscription. */
export interface ProcessorSubscription {
  id: string;
  customer: string;
  /** Stripe's status: incomplete, incomplete_expired, trialing, active, past_due, canceled, unpaid, paused. */
  status: string;
  /** The first item's price id. */
  priceId: string | null;
  /** Top-level in API versions before 2025-03-31, on the subscription item after: read from either. */
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  /** The object as the processor sent it. */
  raw: Record<string, unknown>;
}

export interface CallOptions {
  /** The Idempotency-Key of the POST: the same key for a retry of the same operation. Default: a random UUID. */
  idempotencyKey?: string;
}

export interface StripeClient {
  /** `POST /v1/customers`; answers the customer id. */
  createCustomer(params: { email?: string; metadata?: Record<string, string> }, options?: CallOptions): Promise<{ id: string }>;
  /** `POST /v1/payment_methods/{id}/attach` with `customer`. */
  attachPaymentMethod(paymentMethodId: string, customerId: string, options?: CallOptions): Promise<{ id: string; customer: string }>;
  /** `POST /v1/subscriptions`: one item of `priceId`, the payment method as default, `payment_behavior=error_if_incomplete`. */
  createSubscription(
    params: { customerId: string; priceId: string; paymentMethodId: string; metadata?: Record<string, string> },
    options?: CallOptions,
  ): Promise<ProcessorSubscription>;
  /** `POST /v1/subscriptions/{id}` with `cancel_at_period_end=true`. */
  cancelAtPeriodEnd(subscriptionId: string, options?: CallOptions): Promise<ProcessorSubscription>;
}

export function createStripeClient(options: StripeClientOptions): StripeClient {
  const base = new URL(options.baseUrl);
  if (base.protocol !== "https:" && base.protocol !== "http:") throw new TypeError("the payment processor URL must be http(s)");
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 20_000;

  async function post(path: string, params: { [key: string]: FormValue }, call: CallOptions | undefined): Promise<Record<string, unknown>> {
    const url = new URL(path, base);
    const headers: Record<string, string> = {
      authorization: `Bearer ${options.secretKey}`,
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
      "idempotency-key": call?.idempotencyKey ?? randomUUID(),
    };
    if (options.apiVersion) headers["stripe-version"] = options.apiVersion;
    const what = `POST ${path}`;
    let response: Response;
    let text: string;
    try {
      response = await doFetch(url, { method: "POST", headers, body: encodeForm(params), signal: AbortSignal.timeout(timeoutMs) });
      text = await response.text();
    } catch (err) {
      const reason =
        err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")
          ? `no answer within ${timeoutMs} ms`
          : "unreachable";
      throw new ProcessorUnavailableError(`the payment processor is unavailable (${what}: ${reason})`);
    }
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (response.status >= 500)
      throw new ProcessorUnavailableError(`the payment processor answered ${response.status} (${what})`, response.status);
    const error = isObject(body) && isObject(body.error) ? body.error : undefined;
    const type = stringOf(error?.type);
    const code = stringOf(error?.code);
    if (response.status === 402) {
      throw new PaymentFailedError(402, code, stringOf(error?.decline_code), type === "card_error" ? stringOf(error?.message) : undefined);
    }
    if (response.status < 200 || response.status >= 300) {
      const detail = [type, code].filter(Boolean).join(": ");
      throw new ProcessorError(
        response.status,
        type,
        code,
        `the payment processor refused ${what} with ${response.status}${detail ? ` (${detail})` : ""}`,
      );
    }
    if (!isObject(body) || typeof body.id !== "string") {
      throw new ProcessorError(response.status, undefined, undefined, `the payment processor answered ${what} without an object id`);
    }
    return body;
  }

  return {
    async createCustomer(params, call) {
      const body = await post("/v1/customers", { email: params.email, metadata: params.metadata }, call);
      return { id: body.id as string };
    },
    async attachPaymentMethod(paymentMethodId, customerId, call) {
      const body = await post(`/v1/payment_methods/${encodeURIComponent(paymentMethodId)}/attach`, { customer: customerId }, call);
      return { id: body.id as string, customer: stringOf(body.customer) ?? customerId };
    },
    async createSubscription(params, call) {
      const body = await post(
        "/v1/subscriptions",
        {
          customer: params.customerId,
          items: [{ price: params.priceId }],
          default_payment_method: params.paymentMethodId,
          payment_behavior: "error_if_incomplete",
          metadata: params.metadata,
        },
        call,
      );
      return readSubscription(body);
    },
    async cancelAtPeriodEnd(subscriptionId, call) {
      const body = await post(`/v1/subscriptions/${encodeURIComponent(subscriptionId)}`, { cancel_at_period_end: true }, call);
      return readSubscription(body);
    },
  };
}

/** A Stripe subscription object (from an answer or from a webhook's `data.object`) as the rpcs read it. */
export function readSubscription(object: Record<string, unknown>): ProcessorSubscription {
  const items = isObject(object.items) && Array.isArray(object.items.data) ? object.items.data : [];
  const first: Record<string, unknown> = isObject(items[0]) ? items[0] : {};
  const price = isObject(first.price) ? first.price : undefined;
  const customer = isObject(object.customer) ? object.customer.id : object.customer;
  return {
    id: String(object.id),
    customer: stringOf(customer) ?? "",
    status: stringOf(object.status) ?? "incomplete",
    priceId: stringOf(price?.id) ?? null,
    currentPeriodStart: dateOf(object.current_period_start ?? first.current_period_start),
    currentPeriodEnd: dateOf(object.current_period_end ?? first.current_period_end),
    cancelAtPeriodEnd: object.cancel_at_period_end === true,
    raw: object,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function dateOf(seconds: unknown): Date | null {
  return typeof seconds === "number" && Number.isFinite(seconds) ? new Date(seconds * 1000) : null;
}
