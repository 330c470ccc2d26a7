// Billing against a payment processor speaking Stripe's wire protocol: the client the billing rpcs
// call, the webhook signature check, and the errors the rpcs map to 402, 503 and 400.
export { InvalidSignatureError, PaymentFailedError, ProcessorError, ProcessorUnavailableError } from "./errors.js";
export { encodeForm, type FormValue } from "./form.js";
export {
  createStripeClient,
  readSubscription,
  type CallOptions,
  type ProcessorSubscription,
  type StripeClient,
  type StripeClientOptions,
} from "./stripe-client.js";
export { verifyStripeSignature } from "./webhook-signature.js";
