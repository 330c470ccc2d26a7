// The console's span filter: spans of the listed instrumentation scopes pass, others are dropped;
// and how a console plan becomes a span processor (every span, some scopes, or none at all).
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import test from "ava";
import { createSpanProcessor } from "./exporters.js";
import { ScopeFilterSpanProcessor } from "./scope-filter.js";

function recorder(scopes: readonly string[] | "all") {
  const exporter = new InMemorySpanExporter();
  const printer = new SimpleSpanProcessor(exporter);
  const provider = new BasicTracerProvider({
    spanProcessors: [scopes === "all" ? printer : new ScopeFilterSpanProcessor(printer, scopes)],
  });
  return {
    span(scope: string, name: string) {
      provider.getTracer(scope).startSpan(name).end();
    },
    async names() {
      await provider.forceFlush();
      return exporter.getFinishedSpans().map((s) => `${s.instrumentationScope.name}/${s.name}`);
    },
  };
}

test("the declared scopes' spans pass; RPC spans and other scopes' are dropped", async (t) => {
  const r = recorder(["agents.turns", "agents.tools"]);
  r.span("meshwork.rpc", "tracking.v1.AssetService/GetAsset");
  r.span("agents.turns", "turn");
  r.span("agents.turns.extra", "similar-name");
  r.span("agents.tools", "tool");
  r.span("meshwork.ingest", "batch");
  t.deepEqual(await r.names(), ["agents.turns/turn", "agents.tools/tool"]);
});

test("no scope listed: nothing passes", async (t) => {
  const r = recorder([]);
  r.span("meshwork.rpc", "call");
  r.span("agents.turns", "turn");
  t.deepEqual(await r.names(), []);
});

test("unfiltered (all): every span passes", async (t) => {
  const r = recorder("all");
  r.span("meshwork.rpc", "call");
  r.span("agents.turns", "turn");
  t.deepEqual(await r.names(), ["meshwork.rpc/call", "agents.turns/turn"]);
});

test("console plans: all prints through a plain processor, scopes through the filter, no scopes through nothing", async (t) => {
  const all = createSpanProcessor({ kind: "console", scopes: "all" }, "svc");
  t.true(all instanceof SimpleSpanProcessor);
  const some = createSpanProcessor({ kind: "console", scopes: ["agents.turns"] }, "svc");
  t.true(some instanceof ScopeFilterSpanProcessor);
  t.true((some as ScopeFilterSpanProcessor).passes({ instrumentationScope: { name: "agents.turns" } }));
  t.false((some as ScopeFilterSpanProcessor).passes({ instrumentationScope: { name: "meshwork.rpc" } }));
  t.is(createSpanProcessor({ kind: "console", scopes: [] }, "svc"), undefined);
  // OTLP is never filtered.
  const otlp = createSpanProcessor({ kind: "otlp", protocol: "http", url: "http://127.0.0.1:1/v1/traces" }, "svc");
  t.truthy(otlp);
  t.false(otlp instanceof ScopeFilterSpanProcessor);
  await Promise.all([all, some, otlp].map((p) => p?.shutdown()));
});
