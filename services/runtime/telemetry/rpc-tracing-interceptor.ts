// Connect interceptors that give every RPC a span and a duration measurement, and carry the
// trace across the call: the client writes traceparent, the server continues from it.
import {
  createNoopMeter,
  type Attributes,
  type Context,
  context,
  type Histogram,
  type MeterProvider,
  metrics,
  propagation,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  trace,
  type TracerProvider,
} from "@opentelemetry/api";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { headerGetter, headerSetter } from "./header-carriers.js";
import { connectErrorCode, grpcStatusName, isFailure, rpcSystemOf } from "./rpc-status.js";

const SCOPE = "meshwork.rpc";
// The semantic conventions' advice for RPC durations, in seconds.
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

export interface RpcTracingOptions {
  /** Default: the global provider (registered by startTelemetry). */
  readonly tracerProvider?: TracerProvider;
  /** Default: the global provider, looked up per call since metrics have no proxy provider. */
  readonly meterProvider?: MeterProvider;
  /** Default: the global propagator. */
  readonly propagator?: TextMapPropagator;
}

export interface TracingInterceptorOptions extends RpcTracingOptions {
  /** Which end of the call this interceptor sits on. Default server. */
  readonly side?: "server" | "client";
}

/** Span kind SERVER; continues the caller's traceparent. */
export function serverTracingInterceptor(options: RpcTracingOptions = {}): Interceptor {
  return createRpcInterceptor("server", options);
}

/** Span kind CLIENT; writes traceparent into the outgoing request. */
export function clientTracingInterceptor(options: RpcTracingOptions = {}): Interceptor {
  return createRpcInterceptor("client", options);
}

export function tracingInterceptor(options: TracingInterceptorOptions = {}): Interceptor {
  return createRpcInterceptor(options.side ?? "server", options);
}

type Next = Parameters<Interceptor>[0];
type AnyRequest = Parameters<Next>[0];

// What the API hands out while no SDK is registered: a proxy whose delegate is this no-op provider.
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const NOOP_METER = createNoopMeter();

function createRpcInterceptor(side: "server" | "client", options: RpcTracingOptions): Interceptor {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const durations = durationHistogram(side, options.meterProvider);
  const carrierFields = (): string[] => (options.propagator ?? propagation).fields();
  /**
   * Nothing would come of a span here: no SDK records spans or durations (exporter none, or no
   * telemetry started), and there is no trace context to pass on — none arrived with a server
   * call, none is current for a client call. Checked per call, since an SDK can start or stop.
   */
  const idle = (header: Headers): boolean => {
    if (!tracingIsNoop(options.tracerProvider) || !durations.isNoop()) return false;
    if (side === "client") return trace.getSpanContext(context.active()) === undefined;
    for (const field of carrierFields()) if (header.has(field)) return false;
    return true;
  };
  const extract = (base: Context, header: Headers): Context =>
    options.propagator ? options.propagator.extract(base, header, headerGetter) : propagation.extract(base, header, headerGetter);
  const inject = (ctx: Context, header: Headers): void =>
    options.propagator ? options.propagator.inject(ctx, header, headerSetter) : propagation.inject(ctx, header, headerSetter);

  // Not an async function: an idle call goes straight on, costing no promise of its own.
  return (next) => (req) => (idle(req.header) ? next(req) : traced(next, req));

  async function traced(next: Next, req: AnyRequest) {
    const started = performance.now();
    const system = rpcSystemOf(req.header);
    const attributes: Attributes = {
      "rpc.system": system,
      "rpc.service": req.service.typeName,
      "rpc.method": req.method.name,
    };
    const parent = side === "server" ? extract(context.active(), req.header) : context.active();
    const span = tracer.startSpan(
      `${req.service.typeName}/${req.method.name}`,
      { kind: side === "server" ? SpanKind.SERVER : SpanKind.CLIENT, attributes },
      parent,
    );
    const active = trace.setSpan(parent, span);
    if (side === "client") {
      inject(active, req.header);
    }
    let finished = false;
    const finish = (error?: unknown): void => {
      if (finished) {
        return;
      }
      finished = true;
      const outcome = statusAttributes(system, error);
      span.setAttributes(outcome.attributes);
      if (error !== undefined && isFailure(side, outcome.code)) {
        span.recordException(error instanceof Error ? error : ConnectError.from(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: ConnectError.from(error).rawMessage });
      }
      span.end();
      durations().record((performance.now() - started) / 1000, { ...attributes, ...outcome.attributes });
    };

    // Nothing records spans (exporter none): a client span only has to pass its parent's trace
    // context on in the headers, and a server span has to make that context current only when there
    // is one. Skipping context.with there spares an async-context switch on every call.
    const carries = span.isRecording() || (side === "server" && trace.getSpanContext(parent) !== undefined);
    try {
      const res = carries ? await context.with(active, () => next(req)) : await next(req);
      if (!res.stream) {
        finish();
        return res;
      }
      return { ...res, message: traceStream(res.message, carries ? active : undefined, finish) };
    } catch (error) {
      finish(error);
      throw error;
    }
  }
}

/** True when spans from this provider (default: the global one) can only be no-ops. */
function tracingIsNoop(provider: TracerProvider | undefined): boolean {
  const current = provider ?? trace.getTracerProvider();
  const effective = current instanceof ProxyTracerProvider ? current.getDelegate() : current;
  return effective === NOOP_TRACER_PROVIDER;
}

function statusAttributes(system: string, error: unknown): { code: number; attributes: Attributes } {
  const code = error === undefined ? 0 : ConnectError.from(error).code;
  const attributes: Attributes = { "rpc.status_code": grpcStatusName(code) };
  if (system === "grpc") {
    attributes["rpc.grpc.status_code"] = code;
  } else if (code !== 0) {
    attributes["rpc.connect_rpc.error_code"] = connectErrorCode(code);
  }
  return { code, attributes };
}

// A stream's span lasts until its last message (or its error); each pull runs in the span's
// context, since that is when a streaming handler's code actually executes.
function traceStream<T>(source: AsyncIterable<T>, active: Context | undefined, finish: (error?: unknown) => void): AsyncIterable<T> {
  // No context to carry (see `carries`): each pull runs as it is, only the end is noted.
  const within = <R>(fn: () => R): R => (active ? context.with(active, fn) : fn());
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = within(() => source[Symbol.asyncIterator]());
      return {
        async next() {
          try {
            const result = await within(() => it.next());
            if (result.done === true) {
              finish();
            }
            return result;
          } catch (error) {
            finish(error);
            throw error;
          }
        },
        async return(value?: unknown) {
          // The consumer stopped early: the other side went away.
          finish(new ConnectError("stream abandoned", Code.Canceled));
          return it.return ? await within(() => it.return!(value)) : { done: true, value: undefined };
        },
      };
    },
  };
}

interface DurationHistogram {
  (): Histogram;
  /** True when the provider in use only hands out no-op meters. */
  isNoop(): boolean;
}

function durationHistogram(side: "server" | "client", provider: MeterProvider | undefined): DurationHistogram {
  let cachedFor: MeterProvider | undefined;
  let histogram: Histogram | undefined;
  let noop = false;
  const current = (): Histogram => {
    const meterProvider = provider ?? metrics.getMeterProvider();
    if (histogram === undefined || cachedFor !== meterProvider) {
      cachedFor = meterProvider;
      const meter = meterProvider.getMeter(SCOPE);
      noop = meter === NOOP_METER;
      histogram = meter.createHistogram(`rpc.${side}.call.duration`, {
        description: `Duration of ${side === "server" ? "incoming" : "outgoing"} RPCs`,
        unit: "s",
        advice: { explicitBucketBoundaries: DURATION_BUCKETS },
      });
    }
    return histogram;
  };
  return Object.assign(current, {
    isNoop(): boolean {
      current();
      return noop;
    },
  });
}
