// The tracing interceptors under `Telemetry:Exporter=none` (the SDK started, nothing recording):
// a call with no trace context to carry goes straight on, one that has one still carries it.
import { context, ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import type { UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { createContextValues } from "@connectrpc/connect";
import test from "ava";
import { AssetService } from "../../../gen/tracking/v1/asset_pb.js";
import { clientTracingInterceptor, serverTracingInterceptor } from "./rpc-tracing-interceptor.js";
import { startTelemetry } from "./start-telemetry.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const telemetry = await startTelemetry({ serviceName: "idle", exporter: "none", logger: silent });
test.after.always(() => telemetry.shutdown());

function request(header: Record<string, string> = {}): UnaryRequest {
  return {
    stream: false,
    service: AssetService,
    method: AssetService.method.getAsset,
    requestMethod: "POST",
    url: "http://in-process/tracking.v1.AssetService/GetAsset",
    header: new Headers(header),
    contextValues: createContextValues(),
    message: {},
    signal: new AbortController().signal,
  } as unknown as UnaryRequest;
}

const answer = Promise.resolve({ stream: false } as UnaryResponse);

test("a server call with no trace context is handed on as it is: no span, no promise of its own", (t) => {
  const seen: UnaryRequest[] = [];
  const call = serverTracingInterceptor()((req) => {
    seen.push(req as UnaryRequest);
    return answer;
  });
  const req = request();
  t.is(call(req), answer);
  t.is(seen[0], req);
});

test("a server call that brings a traceparent runs inside that trace", async (t) => {
  let traceId: string | undefined;
  const call = serverTracingInterceptor()(() => {
    traceId = trace.getSpanContext(context.active())?.traceId;
    return answer;
  });
  await call(request({ traceparent: PARENT }));
  t.is(traceId, TRACE_ID);
});

test("a client call passes the current trace on and, with none current, steps aside", async (t) => {
  const call = clientTracingInterceptor()(() => answer);
  const bare = request();
  t.is(call(bare), answer);
  t.is(bare.header.get("traceparent"), null);

  const current = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED });
  const carried = request();
  await context.with(current, () => call(carried));
  t.regex(carried.header.get("traceparent") ?? "", new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
});
