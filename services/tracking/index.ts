// The asset tracking bounded context, as a module the mesh can host.
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import type { ServiceModule } from "../runtime/module/index.js";
import { assetService } from "./asset-service.js";
import { trackingStream } from "./events/subjects.js";
import { AssetEntity } from "./store/asset-entity.js";
import { TrackingAssets0001 } from "./store/migrations/0001-assets.js";

export { subjects, trackingStream } from "./events/subjects.js";

export const trackingModule: ServiceModule = {
  name: "tracking",
  services: [AssetService],
  database: {
    name: "tracking",
    entities: [AssetEntity],
    migrations: [{ name: "tracking-0001-assets", class: TrackingAssets0001 }],
  },
  streams: [trackingStream],
  front: {
    name: "tracking",
    address: (config) => config.services.tracking.address,
  },
  register: (deps) => [{ service: AssetService, impl: assetService(deps) }],
};
