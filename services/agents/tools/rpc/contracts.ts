// The contracts whose unary rpcs become mesh RPC tools: every file of tracking.v1 and protection.v1
// in gen/ that declares a service. A new service file is added here (one import).
import type { DescFile } from "@bufbuild/protobuf";
import { file_protection_v1_account } from "../../../../gen/protection/v1/account_pb.js";
import { file_protection_v1_analytics } from "../../../../gen/protection/v1/analytics_pb.js";
import { file_protection_v1_app_signature } from "../../../../gen/protection/v1/app_signature_pb.js";
import { file_protection_v1_auth } from "../../../../gen/protection/v1/auth_pb.js";
import { file_protection_v1_billing } from "../../../../gen/protection/v1/billing_pb.js";
import { file_protection_v1_blocklist_admin } from "../../../../gen/protection/v1/blocklist_admin_pb.js";
import { file_protection_v1_blocklist } from "../../../../gen/protection/v1/blocklist_pb.js";
import { file_protection_v1_device_event } from "../../../../gen/protection/v1/device_event_pb.js";
import { file_protection_v1_device } from "../../../../gen/protection/v1/device_pb.js";
import { file_protection_v1_enrollment } from "../../../../gen/protection/v1/enrollment_pb.js";
import { file_protection_v1_federation } from "../../../../gen/protection/v1/federation_pb.js";
import { file_protection_v1_health } from "../../../../gen/protection/v1/health_pb.js";
import { file_protection_v1_organization } from "../../../../gen/protection/v1/organization_pb.js";
import { file_protection_v1_partner } from "../../../../gen/protection/v1/partner_pb.js";
import { file_protection_v1_pki } from "../../../../gen/protection/v1/pki_pb.js";
import { file_protection_v1_review_queue } from "../../../../gen/protection/v1/review_queue_pb.js";
import { file_tracking_v1_asset } from "../../../../gen/tracking/v1/asset_pb.js";
import { file_tracking_v1_auth } from "../../../../gen/tracking/v1/auth_pb.js";
import { file_tracking_v1_breach } from "../../../../gen/tracking/v1/breach_pb.js";
import { file_tracking_v1_device } from "../../../../gen/tracking/v1/device_pb.js";
import { file_tracking_v1_event_stream } from "../../../../gen/tracking/v1/event_stream_pb.js";
import { file_tracking_v1_geofence } from "../../../../gen/tracking/v1/geofence_pb.js";
import { file_tracking_v1_integration } from "../../../../gen/tracking/v1/integration_pb.js";
import { file_tracking_v1_observation } from "../../../../gen/tracking/v1/observation_pb.js";
import { file_tracking_v1_speed_alert } from "../../../../gen/tracking/v1/speed_alert_pb.js";
import { file_tracking_v1_system } from "../../../../gen/tracking/v1/system_pb.js";
import { file_tracking_v1_webhook } from "../../../../gen/tracking/v1/webhook_pb.js";

export const MESH_RPC_PACKAGES = ["tracking.v1", "protection.v1"] as const;

export const meshRpcFiles: readonly DescFile[] = [
  file_protection_v1_account,
  file_protection_v1_analytics,
  file_protection_v1_app_signature,
  file_protection_v1_auth,
  file_protection_v1_billing,
  file_protection_v1_blocklist_admin,
  file_protection_v1_blocklist,
  file_protection_v1_device_event,
  file_protection_v1_device,
  file_protection_v1_enrollment,
  file_protection_v1_federation,
  file_protection_v1_health,
  file_protection_v1_organization,
  file_protection_v1_partner,
  file_protection_v1_pki,
  file_protection_v1_review_queue,
  file_tracking_v1_asset,
  file_tracking_v1_auth,
  file_tracking_v1_breach,
  file_tracking_v1_device,
  file_tracking_v1_event_stream,
  file_tracking_v1_geofence,
  file_tracking_v1_integration,
  file_tracking_v1_observation,
  file_tracking_v1_speed_alert,
  file_tracking_v1_system,
  file_tracking_v1_webhook,
];
