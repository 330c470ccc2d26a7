// GET /health, /health/ready and /health/live of the agent front (proto/agents/v1/health.proto).
// The report is the worst of its checks, computed at most once a second and shared by the
// callers of that second, so probes never pile up on the database; readiness fails (503 with
// the report) only when the status is Unhealthy.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { HealthReportSchema, HealthService, type HealthReport } from "../../../gen/agents/v1/health_pb.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import {
  type CheckResult,
  diskSpaceCheck,
  gatewayCheck,
  type HealthSources,
  type HealthStatusName,
  memoryCheck,
  providersCheck,
  sessionStoreCheck,
} from "./checks.js";
import { formatTimeSpan } from "./time-span.js";

/** The package version, reported by health and the MCP server. */
export const gatewayVersion = (createRequire(import.meta.url)("../../../package.json") as { version: string }).version;

/** A report is served for at most this long after it was computed (the interface allows 2 s). */
export const REPORT_MAX_AGE_MS = 1000;

const RANK: Record<HealthStatusName, number> = { Healthy: 0, Degraded: 1, Unhealthy: 2 };

export interface AgentHealth {
  report(): Promise<HealthReport>;
}

export function createAgentHealth(sources: HealthSources, now: () => number = () => performance.now()): AgentHealth {
  let cached: { at: number; report: Promise<HealthReport> } | undefined;
  async function compute(): Promise<HealthReport> {
    const started = performance.now();
    const entries: [string, CheckResult][] = [];
    const results = await Promise.all([
      gatewayCheck(sources),
      providersCheck(sources),
      sessionStoreCheck(sources),
      diskSpaceCheck(sources),
      memoryCheck(sources),
    ]);
    ["gateway", "providers", "session_store", "disk_space", "memory"].forEach((name, i) => entries.push([name, results[i]!]));
    const worst = results.reduce<HealthStatusName>((w, r) => (RANK[r.status] > RANK[w] ? r.status : w), "Healthy");
    const json = {
      status: worst,
      totalDuration: formatTimeSpan(performance.now() - started),
      version: gatewayVersion,
      entries: Object.fromEntries(entries.map(([name, r]) => [name, { ...r, data: r.data }])),
    } as unknown as JsonObject;
    return fromJson(HealthReportSchema, json);
  }
  return {
    report() {
      const at = now();
      if (cached === undefined || at - cached.at >= REPORT_MAX_AGE_MS) {
        const report = compute();
        cached = { at, report };
        // A failed computation is not kept: the next probe tries again.
        report.catch(() => {
          if (cached?.report === report) cached = undefined;
        });
      }
      return cached.report;
    },
  };
}

export function agentHealthService(health: AgentHealth): ServiceRegistration {
  return defineService(HealthService, {
    async getHealth() {
      return await health.report();
    },
    async getReadiness() {
      const report = await health.report();
      if (report.status !== "Unhealthy") return report;
      // The report rides on the error: REST answers it as the 503's body, gRPC sees Unavailable.
      throw new ConnectError("the agent gateway is unhealthy", Code.Unavailable, undefined, [{ desc: HealthReportSchema, value: report }]);
    },
    getLiveness() {
      return { status: "Live" };
    },
  });
}
