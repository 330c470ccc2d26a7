import test from "ava";
import { Health } from "../../../gen/grpc/health/v1/health_pb.js";
import { AssetService } from "../../../gen/tracking/v1/asset_pb.js";
import { AuthService } from "../../../gen/tracking/v1/auth_pb.js";
import { GeofenceBreachService } from "../../../gen/tracking/v1/breach_pb.js";
import { DeviceService } from "../../../gen/tracking/v1/device_pb.js";
import { GeofenceService } from "../../../gen/tracking/v1/geofence_pb.js";
import { ObservationService } from "../../../gen/tracking/v1/observation_pb.js";
import { SpeedAlertService } from "../../../gen/tracking/v1/speed_alert_pb.js";
import { SystemService } from "../../../gen/tracking/v1/system_pb.js";
import { policyOf } from "./policy.js";

test("the method's own auth wins over the service default", (t) => {
  t.deepEqual(policyOf(ObservationService.method.ingestObservation), { kind: "api-key", role: "ingest" });
  t.deepEqual(policyOf(ObservationService.method.batchIngestObservations), { kind: "api-key", role: "ingest" });
  t.deepEqual(policyOf(ObservationService.method.streamIngestObservations), { kind: "api-key", role: "ingest" });
  t.deepEqual(policyOf(SystemService.method.getHealth), { kind: "none", role: "" });
  t.deepEqual(policyOf(SystemService.method.getServiceInfo), { kind: "none", role: "" });
  t.deepEqual(policyOf(AuthService.method.getMe), { kind: "none", role: "" });
});

test("a method without its own auth takes the service's default_auth", (t) => {
  t.deepEqual(policyOf(DeviceService.method.listDevices), { kind: "api-key", role: "operator" });
  t.deepEqual(policyOf(ObservationService.method.createObservation), { kind: "api-key", role: "operator" });
  t.deepEqual(policyOf(SystemService.method.seedDemoData), { kind: "api-key", role: "operator" });
});

test("no option anywhere: none, and the answer is cached per method", (t) => {
  const policy = policyOf(Health.method.check);
  t.deepEqual(policy, { kind: "none", role: "" });
  t.is(policyOf(Health.method.check), policy);
  t.is(policyOf(DeviceService.method.listDevices), policyOf(DeviceService.method.listDevices));
});

test("every tracking rpc needs a key, but for health, the service index and auth/me", (t) => {
  const open = new Set(["GetHealth", "GetServiceInfo", "GetMe"]);
  const services = [
    AssetService,
    DeviceService,
    ObservationService,
    GeofenceService,
    GeofenceBreachService,
    SpeedAlertService,
    SystemService,
    AuthService,
  ];
  for (const service of services) {
    for (const method of service.methods) {
      t.is(policyOf(method).kind === "none", open.has(method.name), `${service.typeName}/${method.name}`);
    }
  }
});
