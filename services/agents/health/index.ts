// The agent gateway's health probes: the report's checks, its cache and the rpcs of health.proto.
export type { CheckResult, HealthSources, HealthStatusName, ProviderAvailability } from "./checks.js";
export { type AgentHealth, agentHealthService, createAgentHealth, REPORT_MAX_AGE_MS } from "./health-service.js";
export { formatTimeSpan } from "./time-span.js";
