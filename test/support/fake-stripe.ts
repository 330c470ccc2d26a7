// A payment processor on loopback speaking Stripe's wire protocol, for the billing tests: bearer
// secret key, form-encoded bodies with bracketed nested keys, JSON objects and errors shaped like
// Stripe's, Idempotency-Key replays. Customers, payment_methods/{id}/attach, subscriptions create,
// retrieve and update. Test payment methods: pm_card_visa (and any other pm_…) succeeds;
// pm_card_chargeDeclined is refused at attach with 402 card_declined; pm_card_chargeCustomerFail
// attaches but its first charge fails (402 at subscription create with error_if_incomplete).
// `unavailable = 503` makes every answer that status. Also signStripeWebhook: a Stripe-Signature.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  contentType: string | undefined;
  /** The raw body as received. */
  body: string;
  /** The form body decoded into nested objects (arrays for numeric keys). */
  form: Record<string, unknown>;
}

export interface FakeStripe {
  url: string;
  secretKey: string;
  requests: RecordedRequest[];
  customers: Map<string, Record<string, unknown>>;
  subscriptions: Map<string, Record<string, unknown>>;
  /** A status (e.g. 503) every request is answered with, until set back to undefined. */
  unavailable: number | undefined;
  close(): Promise<void>;
}

const period = 30 * 24 * 3600;

/** The nested object of a form body: `items[0][price]=p` → `{ items: [{ price: "p" }] }`. */
export function decodeStripeForm(body: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
    if (!match) continue;
    const path = [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!)];
    let node: Record<string, unknown> | unknown[] = root;
    for (let i = 0; i < path.length; i++) {
      const part = path[i]!;
      const last = i === path.length - 1;
      const slot = node as Record<string, unknown>;
      if (last) slot[part] = value;
      else {
        if (slot[part] === undefined) slot[part] = /^\d+$/.test(path[i + 1]!) ? [] : {};
        node = slot[part] as Record<string, unknown>;
      }
    }
  }
  return root;
}

export async function startFakeStripe(options: { secretKey?: string } = {}): Promise<FakeStripe> {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(12).toString("hex")}`;
  const requests: RecordedRequest[] = [];
  const customers = new Map<string, Record<string, unknown>>();
  const subscriptions = new Map<string, Record<string, unknown>>();
  const attached = new Map<string, string>();
  const replays = new Map<string, { status: number; body: unknown }>();
  const id = (prefix: string) => `${prefix}_${randomBytes(8).toString("hex")}`;
  const now = () => Math.floor(Date.now() / 1000);

  function error(status: number, type: string, message: string, extra: Record<string, unknown> = {}) {
    return { status, body: { error: { type, message, ...extra } } };
  }

  function route(method: string, path: string, form: Record<string, unknown>): { status: number; body: unknown } {
    if (method === "POST" && path === "/v1/customers") {
      const customer = { id: id("cus"), object: "customer", email: form.email ?? null, metadata: form.metadata ?? {}, created: now() };
      customers.set(customer.id, customer);
      return { status: 200, body: customer };
    }
    const attach = /^\/v1\/payment_methods\/([^/]+)\/attach$/.exec(path);
    if (method === "POST" && attach) {
      const pm = decodeURIComponent(attach[1]!);
      const customer = String(form.customer ?? "");
      if (!customers.has(customer))
        return error(400, "invalid_request_error", `No such customer: '${customer}'`, { code: "resource_missing", param: "customer" });
      if (!pm.startsWith("pm_")) return error(400, "invalid_request_error", `No such PaymentMethod: '${pm}'`, { code: "resource_missing" });
      if (pm === "pm_card_chargeDeclined") {
        return error(402, "card_error", "Your card was declined.", { code: "card_declined", decline_code: "generic_decline" });
      }
      attached.set(pm, customer);
      return { status: 200, body: { id: pm, object: "payment_method", type: "card", customer } };
    }
    if (method === "POST" && path === "/v1/subscriptions") {
      const customer = String(form.customer ?? "");
      const items = Array.isArray(form.items) ? (form.items as Record<string, unknown>[]) : [];
      const price = items[0]?.price;
      const pm = String(form.default_payment_method ?? "");
      if (!customers.has(customer))
        return error(400, "invalid_request_error", `No such customer: '${customer}'`, { code: "resource_missing" });
      if (typeof price !== "string")
        return error(400, "invalid_request_error", "Missing required param: items[0][price].", { code: "parameter_missing" });
      if (attached.get(pm) !== customer) {
        return error(400, "invalid_request_error", "The payment method is not attached to this customer.", { code: "resource_missing" });
      }
      if (pm === "pm_card_chargeCustomerFail" && form.payment_behavior === "error_if_incomplete") {
        return error(402, "card_error", "Your card was declined.", { code: "card_declined", decline_code: "insufficient_funds" });
      }
      const start = now();
      const subscription = {
        id: id("sub"),
        object: "subscription",
        customer,
        status: "active",
        cancel_at_period_end: false,
        current_period_start: start,
        current_period_end: start + period,
        default_payment_method: pm,
        items: {
          object: "list",
          data: [
            {
              id: id("si"),
              object: "subscription_item",
              price: { id: price },
              current_period_start: start,
              current_period_end: start + period,
            },
          ],
        },
        metadata: form.metadata ?? {},
      };
      subscriptions.set(subscription.id, subscription);
      return { status: 200, body: subscription };
    }
    const one = /^\/v1\/subscriptions\/([^/]+)$/.exec(path);
    if (one) {
      const subscription = subscriptions.get(decodeURIComponent(one[1]!));
      if (!subscription) return error(404, "invalid_request_error", `No such subscription: '${one[1]}'`, { code: "resource_missing" });
      if (method === "GET") return { status: 200, body: subscription };
      if (method === "POST") {
        if (form.cancel_at_period_end !== undefined) subscription.cancel_at_period_end = form.cancel_at_period_end === "true";
        return { status: 200, body: subscription };
      }
    }
    return error(404, "invalid_request_error", `Unrecognized request URL (${method}: ${path}).`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const method = req.method ?? "GET";
    const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
    const form = decodeStripeForm(body);
    requests.push({
      method,
      path,
      authorization: req.headers.authorization,
      idempotencyKey,
      contentType: req.headers["content-type"],
      body,
      form,
    });
    const send = (answer: { status: number; body: unknown }, headers: Record<string, string> = {}) => {
      res.writeHead(answer.status, { "content-type": "application/json", "request-id": id("req"), ...headers });
      res.end(JSON.stringify(answer.body));
    };
    if (fake.unavailable !== undefined) return send(error(fake.unavailable, "api_error", "The processor is having a bad day."));
    if (req.headers.authorization !== `Bearer ${secretKey}`) {
      const shown = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      return send(error(401, "invalid_request_error", `Invalid API Key provided: ${shown.slice(0, 8)}****${shown.slice(-4)}`));
    }
    if (method === "POST" && idempotencyKey) {
      const replay = replays.get(`${idempotencyKey} ${path}`);
      if (replay) return send(replay, { "idempotent-replayed": "true" });
    }
    const answer = route(method, path, form);
    if (method === "POST" && idempotencyKey && answer.status < 500) replays.set(`${idempotencyKey} ${path}`, answer);
    send(answer);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeStripe = {
    url: `http://127.0.0.1:${port}`,
    secretKey,
    requests,
    customers,
    subscriptions,
    unavailable: undefined,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
  return fake;
}

/** A `Stripe-Signature` header for `body` as Stripe computes it: `t=<seconds>,v1=<hex HMAC-SHA256 of "t.body">`. */
export function signStripeWebhook(body: string | Uint8Array, secret: string, at: Date = new Date()): string {
  const t = Math.floor(at.getTime() / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  return `t=${t},v1=${v1}`;
}
