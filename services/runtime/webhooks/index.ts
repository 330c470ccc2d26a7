// Webhooks as a library a module configures: durable delivery through PostgreSQL, Standard
// Webhooks signing, backoff with jitter and Retry-After, 410 disables, an SSRF guard pinned to
// the checked addresses, and the attempt log. The module brings its event types, the subjects
// that feed them, how each event renders, and the prefix of its tables.
export {
  createWebhooks,
  type AttemptQuery,
  type WebhookSettings,
  type Webhooks,
  type WebhooksOptions,
} from "./create-webhooks.js";
export type { DeliveryStats } from "./delivery-store.js";
export { WebhookSettingsError, type WebhookEndpoint, type WebhookEndpointSettings } from "./webhook-endpoints.js";
export { webhookBody, type RenderedWebhookEvent, type WebhookSource } from "./webhook-source.js";
export { webhookTables, type WebhookAttemptRow, type WebhookTableNames, type WebhookTables } from "./webhook-tables.js";
