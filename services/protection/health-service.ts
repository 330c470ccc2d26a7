// protection.v1.HealthService: { status, version, db, cache }; db is PostgreSQL, cache the event bus.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { createRequire } from "node:module";
import { HealthSchema, type HealthService } from "../../gen/protection/v1/health_pb.js";
import type { ModuleDeps } from "../runtime/module/index.js";

const version = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

export function healthService(deps: Pick<ModuleDeps, "db" | "bus" | "logger">): ServiceImpl<typeof HealthService> {
  return {
    async getHealth() {
      const [db, bus] = await Promise.all([deps.db.health(), deps.bus.health()]);
      const report = { status: db.ok && bus.ok ? "ok" : "degraded", version, db: db.ok ? "ok" : "error", cache: bus.ok ? "ok" : "error" };
      if (report.status === "ok") return report;
      // A probe reads the status: degraded is a 503, with the report as its body (the rpc's own output type).
      deps.logger.warn({ db: db.detail, bus: bus.detail }, "health check failed");
      throw new ConnectError("degraded", Code.Unavailable, undefined, [{ desc: HealthSchema, value: create(HealthSchema, report) }]);
    },
  };
}
