// Trace context crosses every hop: the caller's traceparent on the REST request reaches the
// service handler through Connect headers and leaves with the event in the bus headers.
import test from "ava";
import { createLogger } from "../../services/runtime/logging/index.js";
import { startTelemetry } from "../../services/runtime/telemetry/index.js";
import { startTestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

test("a traceparent sent to the gateway arrives on the asset.created event", async (t) => {
  const telemetry = await startTelemetry({
    serviceName: "trace-test",
    exporter: "none",
    env: {},
    logger: createLogger({ level: "silent" }),
  });
  t.teardown(() => telemetry.shutdown());
  const mesh = await startTestMesh();
  t.teardown(() => mesh.close());

  const headers: Record<string, string>[] = [];
  const sub = await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.asset.created"] }, (m) => {
    headers.push(m.headers);
  });
  t.teardown(() => sub.stop());

  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const res = await fetch(`${mesh.frontUrl("tracking")}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    body: JSON.stringify({ name: "traced" }),
  });
  t.is(res.status, 200);
  await mesh.drainOutbox();
  await until(() => headers.length > 0, "an event on the bus");
  const traceparent = headers.map((h) => h.traceparent).find((v) => v?.includes(traceId));
  t.truthy(traceparent, `no event carried trace ${traceId}: ${JSON.stringify(headers)}`);
  t.regex(traceparent!, /^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-0[01]$/);
});
