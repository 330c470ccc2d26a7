// RPC spans and durations through a real host and real clients, recorded by an in-memory
// exporter: one span per call, the right attributes, and the caller's trace continued.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { DataPointType, MeterProvider, MetricReader, type HistogramMetricData } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import test from "ava";
import { AssetService } from "../../../gen/tracking/v1/asset_pb.js";
import { buildRoutes, definePartialService, startServiceHost } from "../host/index.js";
import { clientTracingInterceptor, serverTracingInterceptor } from "./rpc-tracing-interceptor.js";

class TestMetricReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const metricReader = new TestMetricReader();
const meterProvider = new MeterProvider({ readers: [metricReader] });
const propagator = new W3CTraceContextPropagator();
const telemetry = { tracerProvider, meterProvider, propagator };

const routes = buildRoutes({
  services: [
    definePartialService(AssetService, {
      getAsset(req) {
        if (req.id !== "a-1") {
          throw new ConnectError("no such asset", Code.NotFound);
        }
        return { id: req.id, name: "Crate" };
      },
    }),
  ],
  interceptors: [serverTracingInterceptor(telemetry)],
});
const host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger: silent });
const baseUrl = `http://127.0.0.1:${host.port}`;
test.after.always(() => host.close());
test.afterEach.always(() => exporter.reset());

async function finishedSpans() {
  await tracerProvider.forceFlush();
  return exporter.getFinishedSpans();
}

test.serial("gRPC call: one SERVER span with rpc attributes, parented by the caller's traceparent", async (t) => {
  const client = createClient(AssetService, createGrpcTransport({ baseUrl }));
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  const callerSpanId = "b7ad6b7169203331";
  await client.getAsset({ id: "a-1" }, { headers: { traceparent: `00-${traceId}-${callerSpanId}-01` } });

  const spans = await finishedSpans();
  t.is(spans.length, 1);
  const [span] = spans;
  t.is(span!.name, "tracking.v1.AssetService/GetAsset");
  t.is(span!.kind, SpanKind.SERVER);
  t.like(span!.attributes, {
    "rpc.system": "grpc",
    "rpc.service": "tracking.v1.AssetService",
    "rpc.method": "GetAsset",
    "rpc.grpc.status_code": 0,
    "rpc.status_code": "OK",
  });
  t.is(span!.spanContext().traceId, traceId);
  t.is(span!.parentSpanContext?.spanId, callerSpanId);
  t.true(span!.parentSpanContext?.isRemote);
});

test.serial("Connect call with the client interceptor: the server span is the client span's child", async (t) => {
  const client = createClient(
    AssetService,
    createConnectTransport({ baseUrl, httpVersion: "2", interceptors: [clientTracingInterceptor(telemetry)] }),
  );
  await client.getAsset({ id: "a-1" });

  const spans = await finishedSpans();
  const server = spans.find((s) => s.kind === SpanKind.SERVER);
  const caller = spans.find((s) => s.kind === SpanKind.CLIENT);
  t.is(spans.length, 2);
  t.truthy(server && caller);
  t.is(server!.spanContext().traceId, caller!.spanContext().traceId);
  t.is(server!.parentSpanContext?.spanId, caller!.spanContext().spanId);
  t.is(caller!.parentSpanContext, undefined, "no active span here, so the client span is a root");
  for (const span of [server!, caller!]) {
    t.like(span.attributes, {
      "rpc.system": "connect_rpc",
      "rpc.service": "tracking.v1.AssetService",
      "rpc.method": "GetAsset",
      "rpc.status_code": "OK",
    });
  }
});

test.serial("a NotFound is the caller's problem: error status on the client span only", async (t) => {
  const client = createClient(
    AssetService,
    createConnectTransport({ baseUrl, httpVersion: "2", interceptors: [clientTracingInterceptor(telemetry)] }),
  );
  const err = await t.throwsAsync(client.getAsset({ id: "missing" }));
  t.is(ConnectError.from(err).code, Code.NotFound);

  const spans = await finishedSpans();
  const server = spans.find((s) => s.kind === SpanKind.SERVER)!;
  const caller = spans.find((s) => s.kind === SpanKind.CLIENT)!;
  t.like(server.attributes, { "rpc.status_code": "NOT_FOUND", "rpc.connect_rpc.error_code": "not_found" });
  t.not(server.status.code, SpanStatusCode.ERROR);
  t.is(caller.status.code, SpanStatusCode.ERROR);
  t.is(caller.events.find((e) => e.name === "exception")?.attributes?.["exception.message"], "[not_found] no such asset");
});

test.serial("durations land in rpc.server.call.duration and rpc.client.call.duration", async (t) => {
  const client = createClient(AssetService, createGrpcTransport({ baseUrl, interceptors: [clientTracingInterceptor(telemetry)] }));
  await client.getAsset({ id: "a-1" });
  await t.throwsAsync(client.getAsset({ id: "missing" }));

  const { resourceMetrics } = await metricReader.collect();
  const all = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  const server = all.find((m) => m.descriptor.name === "rpc.server.call.duration") as HistogramMetricData | undefined;
  const caller = all.find((m) => m.descriptor.name === "rpc.client.call.duration") as HistogramMetricData | undefined;
  t.is(server?.dataPointType, DataPointType.HISTOGRAM);
  t.is(server?.descriptor.unit, "s");
  const grpcPoints = server!.dataPoints.filter((p) => p.attributes["rpc.system"] === "grpc");
  const ok = grpcPoints.find((p) => p.attributes["rpc.status_code"] === "OK");
  const notFound = grpcPoints.find((p) => p.attributes["rpc.status_code"] === "NOT_FOUND");
  t.like(ok?.attributes, { "rpc.service": "tracking.v1.AssetService", "rpc.method": "GetAsset", "rpc.grpc.status_code": 0 });
  t.true((ok?.value.count ?? 0) >= 2, "this test's call and the first test's");
  t.is(notFound?.value.count, 1);
  t.true(caller!.dataPoints.some((p) => p.attributes["rpc.status_code"] === "NOT_FOUND" && p.value.count === 1));
});
