// grpc.health.v1.Health over a HealthRegistry: what Kubernetes probes, grpc-health-probe and
// load balancers ask.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Wire,
} from "../../../../gen/grpc/health/v1/health_pb.js";
import type { HealthRegistry, WatchedStatus } from "./health-registry.js";

const wireStatus: Record<WatchedStatus, Wire> = {
  UNKNOWN: Wire.UNKNOWN,
  SERVING: Wire.SERVING,
  NOT_SERVING: Wire.NOT_SERVING,
  SERVICE_UNKNOWN: Wire.SERVICE_UNKNOWN,
};

export function createHealthService(registry: HealthRegistry): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const status = registry.getStatus(req.service);
      if (status === undefined) {
        throw new ConnectError(`unknown service ${JSON.stringify(req.service)}`, Code.NotFound);
      }
      return { status: wireStatus[status] };
    },
    list() {
      const statuses: Record<string, ReturnType<typeof checkResponse>> = {};
      for (const [service, status] of registry.statuses()) {
        statuses[service] = checkResponse(wireStatus[status]);
      }
      return { statuses };
    },
    async *watch(req, ctx) {
      for await (const status of registry.watch(req.service, ctx.signal)) {
        yield { status: wireStatus[status] };
      }
    },
  };
}

function checkResponse(status: Wire) {
  return create(HealthCheckResponseSchema, { status });
}
