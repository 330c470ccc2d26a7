// A span processor that hands on only the spans of some instrumentation scopes: the console
// exporter prints the low-volume scopes service modules declare, not a line per RPC.
import type { Context } from "@opentelemetry/api";
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base";

export class ScopeFilterSpanProcessor implements SpanProcessor {
  private readonly scopes: ReadonlySet<string>;

  /** `scopes`: the instrumentation scope names (the tracer names) whose spans pass. */
  constructor(
    private readonly inner: SpanProcessor,
    scopes: Iterable<string>,
  ) {
    this.scopes = new Set(scopes);
  }

  /** Whether a span from this instrumentation scope reaches the wrapped processor. */
  passes(span: Pick<ReadableSpan, "instrumentationScope">): boolean {
    return this.scopes.has(span.instrumentationScope.name);
  }

  onStart(span: Span, parentContext: Context): void {
    if (this.passes(span)) this.inner.onStart(span, parentContext);
  }

  onEnding(span: Span): void {
    if (this.inner.onEnding !== undefined && this.passes(span)) this.inner.onEnding(span);
  }

  onEnd(span: ReadableSpan): void {
    if (this.passes(span)) this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
