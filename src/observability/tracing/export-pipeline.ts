/**
 * The export side of tracing (SPEC §9), built only when an endpoint is configured: the official
 * SDK's tracer provider and batch processor, and the official OTLP/HTTP exporter (protobuf or
 * JSON). Around them, what the SDK does not offer: a hard bound on ended spans not yet exported
 * (`telemetry.maxQueueSize`, counted past it), and a count of spans an export lost (collector
 * refusing, failing or timing out): both in `outrigger_trace_spans_dropped_total`, with one
 * warning in the log the first time. Nothing here runs on a request's own path but `onEnd`,
 * which only counts and hands the span over: export happens on the processor's timer.
 */
import type { Context } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ResolvedTelemetry } from '../../config/telemetry.js';

export interface ExportCounters {
  /** Spans lost: the queue was full, or their export failed or timed out. */
  dropped(count: number, reason: string): void;
  exported(count: number): void;
}

type ExportResult = { code: number; error?: Error };

/** Counts what the exporter lost; the callback order and results are the exporter's own. */
class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly counters: ExportCounters,
    private readonly settled: (count: number) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    let called = false;
    const finish = (result: ExportResult) => {
      if (called) return;
      called = true;
      this.settled(spans.length);
      if (result.code === 0) this.counters.exported(spans.length);
      else this.counters.dropped(spans.length, result.error?.message ?? 'the export failed');
      done(result);
    };
    try {
      this.inner.export(spans, finish);
    } catch (error) {
      finish({ code: 1, error: error as Error });
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** Holds at most `max` sampled spans between their end and their export's result; drops (and counts) past it. */
class BoundedProcessor implements SpanProcessor {
  private pending = 0;

  constructor(
    private readonly max: number,
    private readonly counters: ExportCounters,
    private inner: SpanProcessor | null = null,
  ) {}

  attach(inner: SpanProcessor): void {
    this.inner = inner;
  }

  settled(count: number): void {
    this.pending = Math.max(0, this.pending - count);
  }

  onStart(span: Span, parent: Context): void {
    this.inner!.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    // Unsampled spans never reach the exporter (the batch processor skips them): not counted.
    if ((span.spanContext().traceFlags & 1) === 0) return;
    if (this.pending >= this.max) {
      this.counters.dropped(1, `more than telemetry.maxQueueSize (${this.max}) spans were waiting for export`);
      return;
    }
    this.pending++;
    this.inner!.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner!.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner!.shutdown();
  }
}

/**
 * With `telemetry.clientSampledFlag: ignore`, a `parentbased_*` sampler decides a request with a
 * remote parent (a client's traceparent) by its root sampler, as if the client had sent no
 * flag: the trace id is kept, the client's choice is not.
 */
function parentBased(root: Sampler, s: ResolvedTelemetry): Sampler {
  return s.clientSampledFlag === 'ignore' ? new ParentBasedSampler({ root, remoteParentSampled: root, remoteParentNotSampled: root }) : new ParentBasedSampler({ root });
}

function samplerFor(s: ResolvedTelemetry): Sampler {
  switch (s.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(s.samplerArg);
    case 'parentbased_always_off':
      return parentBased(new AlwaysOffSampler(), s);
    case 'parentbased_traceidratio':
      return parentBased(new TraceIdRatioBasedSampler(s.samplerArg), s);
    default:
      return parentBased(new AlwaysOnSampler(), s);
  }
}

/** The longest string attribute value a span keeps (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT's role). */
export const MAX_ATTRIBUTE_LENGTH = 1024;

export function createTracerProvider(s: ResolvedTelemetry, version: string | undefined, counters: ExportCounters): BasicTracerProvider {
  const options = {
    url: s.url,
    headers: s.headers,
    timeoutMillis: s.timeoutMs,
    // One export at a time is enough for a sidecar; more only piles sockets on a hanging collector.
    concurrencyLimit: 2,
  };
  const exporter = s.protocol === 'http/json' ? new JsonTraceExporter(options) : new ProtobufTraceExporter(options);
  const bounded = new BoundedProcessor(s.maxQueueSize, counters);
  const counting = new CountingExporter(exporter, counters, (n) => bounded.settled(n));
  bounded.attach(
    new BatchSpanProcessor(counting, {
      // Never the batch processor's own silent drop: the bound above is reached first.
      maxQueueSize: s.maxQueueSize + 512,
      maxExportBatchSize: Math.min(512, s.maxQueueSize),
      scheduledDelayMillis: 1000,
      exportTimeoutMillis: s.timeoutMs + 1000,
    }),
  );
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ ...s.resourceAttributes, [ATTR_SERVICE_NAME]: s.serviceName, ...(version ? { [ATTR_SERVICE_VERSION]: version } : {}) }),
    sampler: samplerFor(s),
    spanProcessors: [bounded],
    // Attributes carry request bytes (the path, Host, error messages): each is cut here, whoever set it (issue 34).
    spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_LENGTH },
  });
}
