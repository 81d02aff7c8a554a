/**
 * Traces (SPEC §9). One `Tracing` per process, built in app.ts from `telemetry:` and the OTEL_*
 * variables, handed to the request chain (a `RequestTrace` per request) and to the webhook
 * worker (a span per delivery attempt).
 *
 * Propagation runs always; export only when an endpoint is configured:
 * - without export, a request's trace is its client's `traceparent` (passed to the backend
 *   unchanged) or a new one Outrigger starts and sends; no span object exists, nothing is
 *   recorded, and a child "span" is the request's own context;
 * - with export, the SDK's sampler decides first (the server span's start), and a request that
 *   is not sampled creates no child spans and builds no attributes: every attribute below is set
 *   only on a recording span.
 * Contexts are passed explicitly (the request's trace lives on its scope), never through
 * AsyncLocalStorage: the pass-through path pays for no async context.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, createTraceState, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { ResolvedTelemetry } from '../../config/telemetry.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { createTracerProvider, MAX_ATTRIBUTE_LENGTH } from './export-pipeline.js';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from './trace-ids.js';

/** One span as the code around it sees it; a no-op (carrying the request's context) when nothing is recorded. */
export interface SpanHandle {
  /** The `traceparent` an outgoing request made under this span carries. */
  readonly traceparent: string;
  /** True when attributes set here are exported: build none when false. */
  readonly recording: boolean;
  set(key: string, value: string | number | boolean): void;
  /** Marks the span failed: `error.type` and the status message. */
  fail(type: string, message?: string): void;
  /** Ends the span; a status code sets `http.response.status_code` (and an error status per the HTTP conventions). */
  end(statusCode?: number): void;
}

export type SpanKindName = 'client' | 'internal';

/** The trace of one request. */
export interface RequestTrace extends SpanHandle {
  readonly traceId: string;
  /**
   * The `traceparent` to set on the proxied request when Outrigger must replace or add one
   * (exporting, or the client sent none or an invalid one); undefined when the client's header
   * passes unchanged.
   */
  readonly replacesClientHeader: boolean;
  /**
   * A child span of the request (authentication, ACL, upstream call, backend read, tee). The
   * attributes are a function, called only for a span that is recorded: nothing is built for
   * one that is not.
   */
  child(name: string, kind: SpanKindName, attributes?: () => Attributes): SpanHandle;
  /** Names the server span once the route is known (`GET /graphql`). */
  rename(name: string, route?: string): void;
}

/** What a request's server span is started from (plain values: this folder knows no RequestScope). */
export interface IncomingRequestFacts {
  method: string;
  path: string;
  scheme: 'http' | 'https';
  clientIp: string;
  traceparent: string | string[] | undefined;
  tracestate: string | string[] | undefined;
  userAgent: string | undefined;
  host: string | undefined;
}

const KINDS = { client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

/**
 * A request path as spans show it (`url.path`, and `url.full` of the upstream call): path
 * parameters are redacted as the query string is left out, since they carry the same kind of
 * secret (`;jsessionid=…`, issue 34): `/a;jsessionid=x/b` is `/a;REDACTED/b`. The length is
 * bounded by the provider's attribute limit.
 */
export function spanPath(rawPath: string): string {
  return rawPath.includes(';') ? rawPath.replace(/;[^/]*/g, ';REDACTED') : rawPath;
}

export class Tracing {
  private readonly tracer: Tracer | null;
  private warned = false;

  private constructor(
    private readonly provider: BasicTracerProvider | null,
    private readonly shutdownWaitMs: number,
  ) {
    this.tracer = provider?.getTracer('outrigger') ?? null;
  }

  /** Propagation only (no endpoint configured). */
  static propagationOnly(): Tracing {
    return new Tracing(null, 0);
  }

  static create(settings: ResolvedTelemetry | null, version: string | undefined, metrics: Metrics, logger: Logger): Tracing {
    if (settings === null) return Tracing.propagationOnly();
    let tracing: Tracing | null = null;
    const provider = createTracerProvider(settings, version, {
      exported: (n) => metrics.traceSpansExported.inc({}, n),
      dropped: (n, reason) => {
        metrics.traceSpansDropped.inc({}, n);
        if (tracing && !tracing.warned) {
          tracing.warned = true;
          logger.warn(
            { endpoint: settings.url, reason },
            'trace spans are being dropped (outrigger_trace_spans_dropped_total counts them); requests are not affected. Check that the collector accepts OTLP over HTTP at this URL',
          );
        }
      },
    });
    tracing = new Tracing(provider, Math.min(settings.timeoutMs, 3000));
    return tracing;
  }

  get exporting(): boolean {
    return this.tracer !== null;
  }

  /** Without export, all a request's trace needs is the client's `traceparent`: no facts object per request. */
  propagate(traceparent: string | string[] | undefined): RequestTrace {
    return new PropagatedTrace(parseTraceparent(traceparent));
  }

  /** The request's trace: its server span when exporting, else the propagated context. */
  begin(r: IncomingRequestFacts): RequestTrace {
    const parent = parseTraceparent(r.traceparent);
    if (this.tracer === null) return new PropagatedTrace(parent);
    const span = this.tracer.startSpan(r.method, { kind: SpanKind.SERVER }, parentContext(parent, r.tracestate));
    return new RecordedTrace(this.tracer, span, r);
  }

  /**
   * A span outside any request, in the trace a stored `traceparent` names (a webhook delivery
   * attempt: SPEC §9, a child of the request's server span). Without one (an event written by an
   * older proxy), a new trace. Without export, a handle naming a new span id in that trace, so
   * the receiver still joins the request's trace.
   */
  startSpan(name: string, kind: SpanKindName, storedTraceparent: string | undefined, attributes?: () => Attributes): SpanHandle {
    const parent = parseTraceparent(storedTraceparent);
    if (this.tracer === null) return new LoneContext(parent);
    const span = this.tracer.startSpan(name, { kind: KINDS[kind] }, parentContext(parent, undefined));
    if (span.isRecording() && attributes) span.setAttributes(attributes());
    return new SpanWrapper(span, kind === 'client');
  }

  /** Flushes what is queued, waiting at most a few seconds (a hanging collector never holds a shutdown). */
  async shutdown(): Promise<void> {
    if (!this.provider) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.provider.shutdown().catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.shutdownWaitMs);
      }),
    ]);
    clearTimeout(timer);
  }
}

function parentContext(parent: ReturnType<typeof parseTraceparent>, tracestate: string | string[] | undefined): Context {
  if (parent === null) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.flags,
    isRemote: true,
    ...(typeof tracestate === 'string' && tracestate.length <= 512 ? { traceState: createTraceState(tracestate) } : {}),
  });
}

function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return formatTraceparent(c.traceId, c.spanId, (c.traceFlags & 1) === 1);
}

/** A recorded span (or the SDK's non-recording one) behind the SpanHandle interface. */
class SpanWrapper implements SpanHandle {
  private header: string | undefined;
  readonly recording: boolean;

  constructor(
    protected readonly span: Span,
    /** Client spans count 4xx as errors; server spans only 5xx (HTTP semantic conventions). */
    private readonly client: boolean,
  ) {
    this.recording = span.isRecording();
  }

  get traceparent(): string {
    return (this.header ??= traceparentOf(this.span));
  }

  set(key: string, value: string | number | boolean): void {
    if (this.recording) this.span.setAttribute(key, value);
  }

  fail(type: string, message?: string): void {
    if (!this.recording) return;
    this.span.setAttribute('error.type', type);
    this.span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message: message.slice(0, MAX_ATTRIBUTE_LENGTH) } : {}) });
  }

  end(statusCode?: number): void {
    if (this.recording && statusCode !== undefined && statusCode > 0) {
      this.span.setAttribute('http.response.status_code', statusCode);
      if (statusCode >= (this.client ? 400 : 500)) {
        this.span.setAttribute('error.type', String(statusCode));
        this.span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    this.span.end();
  }
}

class RecordedTrace extends SpanWrapper implements RequestTrace {
  readonly traceId: string;
  readonly replacesClientHeader = true;
  private readonly context: Context;

  constructor(
    private readonly tracer: Tracer,
    span: Span,
    r: IncomingRequestFacts,
  ) {
    super(span, false);
    this.traceId = span.spanContext().traceId;
    this.context = trace.setSpan(ROOT_CONTEXT, span);
    if (!this.recording) return;
    span.setAttributes({
      'http.request.method': r.method,
      'url.path': spanPath(r.path),
      'url.scheme': r.scheme,
      'client.address': r.clientIp,
      ...(r.host ? { 'server.address': r.host.replace(/:\d+$/, '') } : {}),
      ...(r.userAgent ? { 'user_agent.original': r.userAgent.slice(0, 256) } : {}),
    });
  }

  child(name: string, kind: SpanKindName, attributes?: () => Attributes): SpanHandle {
    // Not sampled: no child spans at all; outgoing requests carry the server span's context.
    if (!this.recording) return this.asContextOnly();
    return new SpanWrapper(this.tracer.startSpan(name, { kind: KINDS[kind], ...(attributes ? { attributes: attributes() } : {}) }, this.context), kind === 'client');
  }

  rename(name: string, route?: string): void {
    if (!this.recording) return;
    this.span.updateName(name);
    if (route) this.span.setAttribute('http.route', route);
  }

  private contextOnly: SpanHandle | undefined;
  private asContextOnly(): SpanHandle {
    return (this.contextOnly ??= { traceparent: this.traceparent, recording: false, set() {}, fail() {}, end() {} });
  }
}

/** No export: the client's context (or one Outrigger started), carried as it is. */
class PropagatedTrace implements RequestTrace {
  readonly traceId: string;
  readonly traceparent: string;
  readonly replacesClientHeader: boolean;
  readonly recording = false;

  constructor(parent: ReturnType<typeof parseTraceparent>) {
    if (parent !== null) {
      this.traceId = parent.traceId;
      // The client's header itself goes to the backend; this (version 00, no trailing fields) is
      // what Outrigger stores and sends elsewhere (webhook events, GraphQL reads).
      this.traceparent = formatTraceparent(parent.traceId, parent.spanId, parent.flags === 1);
      this.replacesClientHeader = false;
    } else {
      this.traceId = newTraceId();
      this.traceparent = formatTraceparent(this.traceId, newSpanId(), true);
      this.replacesClientHeader = true;
    }
  }

  set(): void {}
  fail(): void {}
  end(): void {}
  rename(): void {}
  child(): SpanHandle {
    return this;
  }
}

/** No export, outside a request: a new span id in the stored trace (or a new trace). */
class LoneContext implements SpanHandle {
  readonly traceparent: string;
  readonly recording = false;
  constructor(parent: ReturnType<typeof parseTraceparent>) {
    this.traceparent = formatTraceparent(parent?.traceId ?? newTraceId(), newSpanId(), parent ? parent.flags === 1 : true);
  }
  set(): void {}
  fail(): void {}
  end(): void {}
}
