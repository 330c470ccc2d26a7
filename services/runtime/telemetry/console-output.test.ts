// What the default telemetry prints while a service answers requests: the console exporter with
// Telemetry:ConsoleSpans=modules and no declared scope prints nothing per request, a declared
// scope's spans are printed, and `all` prints a span per RPC. stdout is captured, spans flushed.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type ProxyTracerProvider, trace } from "@opentelemetry/api";
import test, { type ExecutionContext } from "ava";
import { AssetService } from "../../../gen/tracking/v1/asset_pb.js";
import { buildRoutes, definePartialService, startServiceHost } from "../host/index.js";
import { serverTracingInterceptor } from "./rpc-tracing-interceptor.js";
import { type StartTelemetryOptions, startTelemetry } from "./start-telemetry.js";

const RPC = "tracking.v1.AssetService/GetAsset";
const REQUESTS = 25;
const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

/**
 * A service host whose tracing interceptor uses the global provider, as the mesh has it. Made
 * after telemetry starts: a tracer taken from the global proxy keeps the provider it first found.
 */
async function startHost(t: ExecutionContext) {
  /** Per call: whether the handler ran inside a recording span (one the SDK hands to its processors). */
  const recording: boolean[] = [];
  const routes = buildRoutes({
    services: [
      definePartialService(AssetService, {
        getAsset(req) {
          recording.push(trace.getActiveSpan()?.isRecording() ?? false);
          return { id: req.id, name: "Crate" };
        },
      }),
    ],
    interceptors: [serverTracingInterceptor()],
  });
  const host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger: silent });
  t.teardown(() => host.close());
  const client = createClient(AssetService, createConnectTransport({ baseUrl: `http://127.0.0.1:${host.port}`, httpVersion: "2" }));
  return { client, recording };
}

function memoryLogger() {
  const lines: { level: string; obj: Record<string, unknown>; msg?: string }[] = [];
  const at =
    (level: string) =>
    (obj: unknown, msg?: string): void =>
      void lines.push({ level, obj: obj as Record<string, unknown>, msg });
  const logger = { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => logger };
  return logger;
}

/** Everything written to stdout from now until `stop`; nothing of it reaches the terminal. */
function captureStdout(t: ExecutionContext) {
  const chunks: string[] = [];
  const original = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
    const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
    callback?.();
    return true;
  }) as typeof process.stdout.write;
  const stop = () => {
    process.stdout.write = original;
  };
  t.teardown(stop);
  return { text: () => chunks.join(""), stop };
}

/** Waits for every span processor of the global provider to finish exporting; none registered: nothing to wait for. */
async function flushSpans(): Promise<void> {
  const delegate = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate() as { forceFlush?: () => Promise<void> };
  await delegate.forceFlush?.();
}

/** Starts telemetry, answers REQUESTS calls and makes one span in `scope`; what stdout got meanwhile. */
async function printedDuringRequests(t: ExecutionContext, options: Partial<StartTelemetryOptions>, scope = "meshwork.test.quiet") {
  const logger = memoryLogger();
  const stdout = captureStdout(t);
  const telemetry = await startTelemetry({ serviceName: "console-test", logger, ...options });
  try {
    const { client, recording } = await startHost(t);
    for (let i = 0; i < REQUESTS; i++) t.is((await client.getAsset({ id: `a-${i}` })).name, "Crate");
    trace.getTracer(scope).startSpan("quiet-unit-of-work").end();
    await flushSpans();
    return { printed: stdout.text(), logger, recording };
  } finally {
    // Shutting down exports the metrics once more; that output is not what the test is about.
    await telemetry.shutdown();
    stdout.stop();
  }
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

test.serial("the default start prints nothing while requests are answered", async (t) => {
  const { printed, logger, recording } = await printedDuringRequests(t, {});
  t.is(printed, "", "no span line, and no metrics before the minute is up");
  t.deepEqual(recording, Array(REQUESTS).fill(false), "with nothing to print, RPC spans are not even recorded");
  const started = logger.lines.find((l) => l.msg === "telemetry started");
  t.deepEqual(started?.obj.traces, ["console (no spans)"]);
  t.deepEqual(started?.obj.metrics, ["console every 60000 ms"]);
});

test.serial("modules: a declared scope's spans are printed, the RPCs' are not", async (t) => {
  const { printed, recording } = await printedDuringRequests(t, {
    exporter: "console",
    consoleSpans: "modules",
    consoleSpanScopes: ["meshwork.test.quiet"],
  });
  t.deepEqual(recording, Array(REQUESTS).fill(true), "the RPC spans were recorded, then left out by the filter");
  t.is(count(printed, "quiet-unit-of-work"), 1);
  t.is(count(printed, RPC), 0);
});

test.serial("all: every RPC is printed, one span each", async (t) => {
  const { printed, recording } = await printedDuringRequests(t, { exporter: "console", consoleSpans: "all" });
  t.deepEqual(recording, Array(REQUESTS).fill(true));
  t.is(count(printed, `name: '${RPC}'`), REQUESTS);
  t.is(count(printed, "quiet-unit-of-work"), 1);
});

test.serial("none: not even a declared scope's spans", async (t) => {
  const { printed } = await printedDuringRequests(t, { consoleSpans: "none", consoleSpanScopes: ["meshwork.test.quiet"] });
  t.is(printed, "");
});

test.serial("a metric interval under a minute is raised for the console, with a warning", async (t) => {
  const { printed, logger } = await printedDuringRequests(t, { env: { OTEL_METRIC_EXPORT_INTERVAL: "10" } });
  t.is(printed, "", "ten milliseconds asked for, yet no metrics printed during the requests");
  t.deepEqual(
    logger.lines.filter((l) => l.level === "warn").map((l) => l.obj.problem),
    ["OTEL_METRIC_EXPORT_INTERVAL=10 is below the console metric exporter's 60000 ms; console metrics print every 60000 ms"],
  );
});
