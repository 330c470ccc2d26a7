// tracking.v1.WebhookService handlers: the delivery log, the status, and the test event (recorded
// in the outbox like a real alert, so it travels the same consumer, queue and dispatcher).
import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { WebhookTestRequestedSchema } from "../../gen/tracking/v1/events_pb.js";
import type { WebhookService } from "../../gen/tracking/v1/webhook_pb.js";
import { invalidArgument, type FieldViolation } from "../runtime/errors/index.js";
import { resolvePage, type PageRequest } from "../runtime/validation/index.js";
import { isWebhookEventType, testSample, webhookEventTypes, type WebhookEventType, type Webhooks } from "./webhooks/index.js";
import type { TrackingDeps } from "./deps.js";

export type WebhookServiceDeps = TrackingDeps & { webhooks: Webhooks };

export function webhookService(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  const { webhooks } = deps;

  return {
    async listWebhookDeliveries(req) {
      const violations: FieldViolation[] = [];
      const eventType = req.eventType === undefined ? undefined : checkedType(req.eventType, violations);
      const page = pageOrViolations(req, violations);
      if (violations.length || !page) throw invalidArgument(violations);
      const { rows, totalCount } = await webhooks.attempts({
        ...(req.success !== undefined ? { success: req.success } : {}),
        ...(eventType ? { eventType } : {}),
        ...(req.since ? { since: timestampDate(req.since) } : {}),
        limit: page.pageSize,
        offset: page.offset,
      });
      return {
        items: rows.map((row) => ({
          id: row.id,
          attemptNumber: row.attemptNumber,
          correlationId: row.correlationId,
          eventType: row.eventType,
          endpoint: row.endpoint,
          success: row.success,
          httpStatusCode: row.httpStatusCode ?? undefined,
          durationMs: row.durationMs,
          error: row.error ?? undefined,
          createdAt: timestampFromDate(row.createdAt),
          deliveryId: row.deliveryId,
          eventId: row.eventId,
        })),
        totalCount,
        page: page.page,
        pageSize: page.pageSize,
      };
    },

    async getWebhookStatus() {
      const [stats, disabled] = await Promise.all([webhooks.stats(), webhooks.disabledEndpoints()]);
      return {
        configured: webhooks.endpoints.length > 0,
        last24hDeliveries: stats.deliveries,
        last24hFailures: stats.failures,
        lastDeliveredAt: stats.lastDeliveredAt ? timestampFromDate(stats.lastDeliveredAt) : undefined,
        avgDurationMs: Math.round(stats.avgDurationMs * 10) / 10,
        retryQueueDepth: stats.queueDepth,
        signingEnabled: webhooks.signingEnabled,
        endpointCount: webhooks.endpoints.length,
        disabledEndpoints: disabled,
      };
    },

    async testWebhook(req) {
      const violations: FieldViolation[] = [];
      const requested = req.eventType === undefined || req.eventType.trim() === "" ? "speed_alert" : req.eventType;
      const eventType = checkedType(requested, violations);
      if (!eventType) throw invalidArgument(violations);
      const configured = webhooks.endpoints.length > 0;
      if (!configured) {
        return {
          fired: false,
          eventType,
          configured,
          message: "No webhook endpoint is configured (Webhooks:Endpoints); nothing was sent.",
        };
      }
      const takers = webhooks.takers(eventType);
      if (takers === 0) {
        return {
          fired: false,
          eventType,
          configured,
          message: `No configured webhook endpoint takes ${eventType} events; nothing was sent.`,
        };
      }
      await deps.uow.run(async (tx) => {
        tx.record(WebhookTestRequestedSchema, { eventType, sample: testSample(eventType) });
      });
      return {
        fired: true,
        eventType,
        configured,
        message: `A test ${eventType} event was queued for ${takers} endpoint${takers === 1 ? "" : "s"}; see GET /api/webhooks/deliveries.`,
      };
    },
  };
}

/** The event type in canonical form (case and blanks ignored), or a violation naming the allowed values. */
function checkedType(value: string, violations: FieldViolation[]): WebhookEventType | undefined {
  const type = value.trim().toLowerCase();
  if (isWebhookEventType(type)) return type;
  violations.push({ field: "event_type", description: `must be one of ${webhookEventTypes.join(", ")}` });
  return undefined;
}

/** The page, or its problems added to the others, so one answer names every bad parameter. */
function pageOrViolations(req: { page?: number; pageSize?: number }, violations: FieldViolation[]): PageRequest | undefined {
  try {
    return resolvePage({ page: req.page, pageSize: req.pageSize });
  } catch (err) {
    const paging = err instanceof ConnectError ? err.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations) : [];
    if (!paging.length) throw err;
    violations.push(...paging.map(({ field, description }) => ({ field, description })));
    return undefined;
  }
}
