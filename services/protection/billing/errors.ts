// What a payment processor's answer means to the billing rpcs. Messages carry the method, the path,
// the status and Stripe's error type and code: never the secret key, and never Stripe's own text
// except a card error's (which speaks to the payer: "Your card was declined.").

/** The processor refused the payment (HTTP 402): the rpc answers 402 PAYMENT_FAILED. */
export class PaymentFailedError extends Error {
  override name = "PaymentFailedError";
  constructor(
    /** The processor's HTTP status (402). */
    readonly status: number,
    /** Stripe's `error.code`, e.g. `card_declined`. */
    readonly code: string | undefined,
    /** Stripe's `error.decline_code`, e.g. `insufficient_funds`. */
    readonly declineCode: string | undefined,
    payerMessage: string | undefined,
  ) {
    super(`the payment processor declined the payment (${status}${code ? ` ${code}` : ""})${payerMessage ? `: ${payerMessage}` : ""}`);
  }
}

/** The processor could not be reached, timed out or answered 5xx: the rpc answers 503 PAYMENT_PROCESSOR_UNAVAILABLE. */
export class ProcessorUnavailableError extends Error {
  override name = "ProcessorUnavailableError";
  constructor(
    message: string,
    /** The processor's HTTP status, undefined when it could not be reached. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Any other refusal (400, 401, 404, 409, 429…): a fault of ours or of the configuration, not of the payer. */
export class ProcessorError extends Error {
  override name = "ProcessorError";
  constructor(
    readonly status: number,
    /** Stripe's `error.type`, e.g. `invalid_request_error`. */
    readonly type: string | undefined,
    /** Stripe's `error.code`, e.g. `resource_missing`. */
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A webhook whose Stripe-Signature does not prove it: the rpc answers 400 INVALID_SIGNATURE. */
export class InvalidSignatureError extends Error {
  override name = "InvalidSignatureError";
}
