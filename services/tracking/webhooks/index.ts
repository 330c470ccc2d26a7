// Tracking's webhooks: the runtime library configured with tracking's event types, the subjects
// that feed them, how each renders, and the tracking_webhook_* tables.
import { ConfigError } from "../../runtime/config/index.js";
import type { ModuleDeps } from "../../runtime/module/index.js";
import type { TrackingSettings } from "../settings.js";
import { createWebhooks, webhookTables, WebhookSettingsError, type Webhooks } from "../../runtime/webhooks/index.js";
import { trackingStream } from "../events/subjects.js";
import { webhookEventTypes } from "./event-types.js";
import { trackingWebhookSources } from "./webhook-payload.js";

export { isWebhookEventType, webhookEventTypes, type WebhookEventType } from "./event-types.js";
export { testSample } from "./test-event.js";
export type { Webhooks } from "../../runtime/webhooks/index.js";

/** The tables migration tracking-0004-webhooks created; their names and rows stay as they were. */
export const trackingWebhookTables = webhookTables("tracking_webhook");

/** Checks the settings now: a bad endpoint is a ConfigError, which stops start-up. */
export function createTrackingWebhooks(deps: ModuleDeps<TrackingSettings>): Webhooks {
  try {
    return createWebhooks({
      name: "tracking",
      settings: deps.settings.webhooks,
      settingsSection: "Webhooks",
      eventTypes: webhookEventTypes,
      stream: trackingStream.name,
      sources: trackingWebhookSources,
      tables: trackingWebhookTables,
      db: deps.db,
      bus: deps.bus,
      logger: deps.logger,
    });
  } catch (err) {
    if (err instanceof WebhookSettingsError) throw new ConfigError(err.message);
    throw err;
  }
}
