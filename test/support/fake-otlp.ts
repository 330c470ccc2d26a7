// A loopback OTLP/HTTP collector (JSON, as the installed exporters send it): records every export
// and reads the spans and metrics back flattened, with their resource's and scope's names.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface OtlpReceived {
  path: string;
  contentType: string | undefined;
  body: string;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpAttribute = { key: string; value: OtlpValue };
type Attributed = { attributes?: OtlpAttribute[] };
interface OtlpSpan extends Attributed {
  name: string;
  status?: { code?: number };
  events?: { name: string }[];
  traceId: string;
  parentSpanId?: string;
}
interface OtlpPoint extends Attributed {
  count?: string | number;
  asInt?: string | number;
  asDouble?: number;
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints?: OtlpPoint[] };
  histogram?: { dataPoints?: OtlpPoint[] };
  gauge?: { dataPoints?: OtlpPoint[] };
}
interface TraceExport {
  resourceSpans?: { resource?: Attributed; scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[] }[];
}
interface MetricExport {
  resourceMetrics?: { resource?: Attributed; scopeMetrics?: { scope?: { name?: string }; metrics?: OtlpMetric[] }[] }[];
}

export interface ExportedSpan {
  resource: Record<string, unknown>;
  scope: string;
  name: string;
  attributes: Record<string, unknown>;
  /** 0 Unset, 1 Ok, 2 Error. */
  status: number;
  events: string[];
  traceId: string;
  parentSpanId: string;
}

export interface ExportedMetric {
  resource: Record<string, unknown>;
  scope: string;
  name: string;
  unit: string;
  kind: "sum" | "histogram" | "gauge";
  points: { attributes: Record<string, unknown>; value: number }[];
}

export interface FakeOtlp {
  url: string;
  received: OtlpReceived[];
  spans(): ExportedSpan[];
  metrics(): ExportedMetric[];
  close(): Promise<void>;
}

const plainValue = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
const attributesOf = (list: OtlpAttribute[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, plainValue(a.value)]));

export async function startFakeOtlp(): Promise<FakeOtlp> {
  const received: OtlpReceived[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", contentType: req.headers["content-type"], body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const bodies = <T>(path: string): T[] => received.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as T);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    spans: () =>
      bodies<TraceExport>("/v1/traces").flatMap((body) =>
        (body.resourceSpans ?? []).flatMap((rs) =>
          (rs.scopeSpans ?? []).flatMap((ss) =>
            (ss.spans ?? []).map(
              (span): ExportedSpan => ({
                resource: attributesOf(rs.resource?.attributes),
                scope: ss.scope?.name ?? "",
                name: span.name,
                attributes: attributesOf(span.attributes),
                status: span.status?.code ?? 0,
                events: (span.events ?? []).map((e: { name: string }) => e.name),
                traceId: span.traceId,
                parentSpanId: span.parentSpanId ?? "",
              }),
            ),
          ),
        ),
      ),
    metrics: () =>
      bodies<MetricExport>("/v1/metrics").flatMap((body) =>
        (body.resourceMetrics ?? []).flatMap((rm) =>
          (rm.scopeMetrics ?? []).flatMap((sm) =>
            (sm.metrics ?? []).map((m): ExportedMetric => {
              const kind = m.sum ? "sum" : m.histogram ? "histogram" : "gauge";
              const data = m.sum ?? m.histogram ?? m.gauge;
              return {
                resource: attributesOf(rm.resource?.attributes),
                scope: sm.scope?.name ?? "",
                name: m.name,
                unit: m.unit ?? "",
                kind,
                points: (data?.dataPoints ?? []).map((p) => ({
                  attributes: attributesOf(p.attributes),
                  value: kind === "histogram" ? Number(p.count) : Number(p.asInt ?? p.asDouble ?? 0),
                })),
              };
            }),
          ),
        ),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
