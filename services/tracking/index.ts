// The asset tracking bounded context, as a module the mesh can host.
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { GeofenceBreachService } from "../../gen/tracking/v1/breach_pb.js";
import { DeviceService } from "../../gen/tracking/v1/device_pb.js";
import { GeofenceService } from "../../gen/tracking/v1/geofence_pb.js";
import { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import { SpeedAlertService } from "../../gen/tracking/v1/speed_alert_pb.js";
import { SystemService } from "../../gen/tracking/v1/system_pb.js";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { createApiKeyStore } from "../runtime/auth/index.js";
import { defineService } from "../runtime/host/index.js";
import { defineModule } from "../runtime/module/index.js";
import { trackingRenamedSettings, trackingRoles, trackingSettings } from "./settings.js";
import { assetService } from "./asset-service.js";
import { breachService } from "./breach-service.js";
import { deviceService } from "./device-service.js";
import { createTrackingEngine } from "./ingest/index.js";
import { createUnitOfWork } from "../runtime/outbox/index.js";
import { trackingStream } from "./events/subjects.js";
import { geofenceService } from "./geofence-service.js";
import { observationService } from "./observation-service.js";
import { speedAlertService } from "./speed-alert-service.js";
import { BreachEntity, SpeedAlertEntity } from "./store/alert-entities.js";
import { AssetEntity } from "./store/asset-entity.js";
import { DeviceEntity } from "./store/device-entity.js";
import { GeofenceEntity, GeofenceStateEntity } from "./store/geofence-entity.js";
import { IntegrationFeedEntity } from "./store/integration-feed-entity.js";
import { TrackingAssets0001 } from "./store/migrations/0001-assets.js";
import { TrackingCore0002 } from "./store/migrations/0002-tracking-core.js";
import { TrackingGeofenceStateByFence0003 } from "./store/migrations/0003-geofence-state-by-fence.js";
import { ObservationEntity } from "./store/observation-entity.js";
import { systemService } from "./system-service.js";
import { AuthService } from "../../gen/tracking/v1/auth_pb.js";
import { authService } from "./auth-service.js";
import { IntegrationService } from "../../gen/tracking/v1/integration_pb.js";
import { integrationService } from "./integration-service.js";
import { WebhookService } from "../../gen/tracking/v1/webhook_pb.js";
import { webhookService } from "./webhook-service.js";
import { createTrackingWebhooks, trackingWebhookTables } from "./webhooks/index.js";
import { EventStreamService } from "../../gen/tracking/v1/event_stream_pb.js";
import { createEventStream, trackingStreamTokenTable } from "./event-stream-service.js";

export { subjects, trackingStream } from "./events/subjects.js";

export const trackingModule = defineModule({
  name: "tracking",
  title: "tracking",
  settings: trackingSettings,
  renamedSettings: trackingRenamedSettings,
  services: [
    SystemService,
    AssetService,
    DeviceService,
    ObservationService,
    GeofenceService,
    GeofenceBreachService,
    SpeedAlertService,
    AuthService,
    IntegrationService,
    WebhookService,
    EventStreamService,
  ],
  database: {
    name: "tracking",
    entities: [
      AssetEntity,
      DeviceEntity,
      ObservationEntity,
      GeofenceEntity,
      GeofenceStateEntity,
      BreachEntity,
      SpeedAlertEntity,
      IntegrationFeedEntity,
      ...trackingWebhookTables.entities,
      trackingStreamTokenTable.entity,
    ],
    migrations: [
      { name: "tracking-0001-assets", class: TrackingAssets0001 },
      { name: "tracking-0002-core", class: TrackingCore0002 },
      { name: "tracking-0003-geofence-state-by-fence", class: TrackingGeofenceStateByFence0003 },
      { name: "tracking-0004-webhooks", class: trackingWebhookTables.migrations[0]! },
      { name: "tracking-0006-stream-tokens", class: trackingStreamTokenTable.migrations[0]! },
    ],
  },
  streams: [trackingStream],
  front: {
    name: "tracking",
    title: "asset tracking REST front (/api)",
    port: (settings) => settings.fronts.tracking.port,
    errorStyle: ErrorStyle.PROBLEM_JSON,
    jsonNaming: JsonNaming.LOWER_CAMEL,
  },
  address: (settings) => settings.services.tracking.address,
  credentialSetting: "Auth:ApiKeys",
  auth: (settings) => ({
    apiKeys: { store: createApiKeyStore(settings.auth.apiKeys, "Auth:ApiKeys"), roles: trackingRoles },
  }),
  async start(deps) {
    // Checks the webhook settings before anything starts: a bad endpoint is a start-up error.
    const webhooks = createTrackingWebhooks(deps);
    const uow = createUnitOfWork(deps);
    const engine = await createTrackingEngine({ ...deps, uow });
    const tracking = { ...deps, engine, uow };
    try {
      await webhooks.start();
    } catch (err) {
      await engine.stop();
      throw err;
    }
    const eventStream = createEventStream(tracking);
    return {
      services: [
        defineService(SystemService, systemService(tracking)),
        defineService(AssetService, assetService(tracking)),
        defineService(DeviceService, deviceService(tracking)),
        defineService(ObservationService, observationService(tracking)),
        defineService(GeofenceService, geofenceService(tracking)),
        defineService(GeofenceBreachService, breachService(tracking)),
        defineService(SpeedAlertService, speedAlertService(tracking)),
        defineService(AuthService, authService()),
        defineService(IntegrationService, integrationService(tracking)),
        { service: WebhookService, impl: webhookService({ ...tracking, webhooks }) },
        defineService(EventStreamService, eventStream.impl),
      ],
      // Stopped in reverse: the stream first, the engine last.
      workers: [
        { name: "ingest engine", stop: () => engine.stop() },
        { name: "webhooks", stop: () => webhooks.stop() },
        { name: "event stream", stop: () => eventStream.stop() },
      ],
    };
  },
});
