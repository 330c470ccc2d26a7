// The asset tracking bounded context, as a module the mesh can host.
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import type { ServiceModule } from "../runtime/module/index.js";
import { assetService } from "./asset-service.js";
import { trackingStream } from "./events/subjects.js";
import { BreachEntity, SpeedAlertEntity } from "./store/alert-entities.js";
import { AssetEntity } from "./store/asset-entity.js";
import { DeviceEntity } from "./store/device-entity.js";
import { GeofenceEntity, GeofenceStateEntity } from "./store/geofence-entity.js";
import { IntegrationFeedEntity } from "./store/integration-feed-entity.js";
import { TrackingAssets0001 } from "./store/migrations/0001-assets.js";
import { TrackingCore0002 } from "./store/migrations/0002-tracking-core.js";
import { ObservationEntity } from "./store/observation-entity.js";

export { subjects, trackingStream } from "./events/subjects.js";

export const trackingModule: ServiceModule = {
  name: "tracking",
  services: [AssetService],
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
    ],
    migrations: [
      { name: "tracking-0001-assets", class: TrackingAssets0001 },
      { name: "tracking-0002-core", class: TrackingCore0002 },
    ],
  },
  streams: [trackingStream],
  front: {
    name: "tracking",
    address: (config) => config.services.tracking.address,
  },
  register: (deps) => [{ service: AssetService, impl: assetService(deps) }],
};
