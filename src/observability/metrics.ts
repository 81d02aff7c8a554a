/**
 * A small Prometheus text-format registry. Label sets are fixed at the call site (route kind,
 * status class): never user input, never secrets, so cardinality stays bounded.
 */
type Labels = Record<string, string>;

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const renderKey = (labels: Labels) =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escape(labels[k]!)}"`)
    .join(',');

/**
 * Label sets repeat (route kind × status class), so the rendered key of each is computed once:
 * the hot path then pays one small string concatenation and a Map lookup per metric update.
 */
const renderedKeys = new Map<string, string>();
const key = (labels: Labels): string => {
  let lookup = '';
  for (const k in labels) lookup += `${k}\u0000${labels[k]}\u0001`;
  let rendered = renderedKeys.get(lookup);
  if (rendered === undefined) {
    rendered = renderKey(labels);
    if (renderedKeys.size < 10_000) renderedKeys.set(lookup, rendered);
  }
  return rendered;
};

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}
  abstract lines(): string[];
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines()].join('\n');
  }
}

/** One label set of a counter, bound once: what a hot path holds instead of passing labels each time. */
export interface CounterSeries {
  inc(by?: number): void;
}

export class Counter extends Metric {
  private readonly values = new Map<string, { value: number }>();
  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }
  inc(labels: Labels = {}, by = 1): void {
    this.cell(key(labels)).value += by;
  }
  series(labels: Labels = {}): CounterSeries {
    const cell = this.cell(key(labels));
    return {
      inc: (by = 1) => {
        cell.value += by;
      },
    };
  }
  get(labels: Labels = {}): number {
    return this.values.get(key(labels))?.value ?? 0;
  }
  lines(): string[] {
    return [...this.values].map(([k, cell]) => `${this.name}${k ? `{${k}}` : ''} ${cell.value}`);
  }
  private cell(k: string): { value: number } {
    let cell = this.values.get(k);
    if (!cell) this.values.set(k, (cell = { value: 0 }));
    return cell;
  }
}

/** A metric read when scraped from the thing it describes: a gauge, or a counter something else keeps (prom-client's `collect`). */
export class Gauge extends Metric {
  private readonly values = new Map<string, () => number>();
  constructor(name: string, help: string, type: 'gauge' | 'counter' = 'gauge') {
    super(name, help, type);
  }
  /** Read when scraped; for a counter, `read` must never go down. */
  track(read: () => number, labels: Labels = {}): void {
    this.values.set(key(labels), read);
  }
  lines(): string[] {
    return [...this.values].map(([k, read]) => `${this.name}${k ? `{${k}}` : ''} ${read()}`);
  }
}

/** One label set of a histogram, bound once. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface HistogramCell {
  /** Per bucket, the observations that fell in it and in no smaller one (summed when rendered). */
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric {
  private readonly cells = new Map<string, HistogramCell>();
  constructor(
    name: string,
    help: string,
    private readonly buckets: number[],
  ) {
    super(name, help, 'histogram');
  }
  observe(value: number, labels: Labels = {}): void {
    this.record(this.cell(key(labels)), value);
  }
  series(labels: Labels = {}): HistogramSeries {
    const cell = this.cell(key(labels));
    return { observe: (value) => this.record(cell, value) };
  }
  lines(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.cells) {
      const sep = k ? `${k},` : '';
      let cumulative = 0;
      this.buckets.forEach((b, i) => {
        cumulative += s.counts[i]!;
        out.push(`${this.name}_bucket{${sep}le="${b}"} ${cumulative}`);
      });
      out.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ''} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ''} ${s.count}`);
    }
    return out;
  }
  private record(cell: HistogramCell, value: number): void {
    const buckets = this.buckets;
    let i = 0;
    while (i < buckets.length && value > buckets[i]!) i++;
    if (i < buckets.length) cell.counts[i]!++;
    cell.sum += value;
    cell.count++;
  }
  private cell(k: string): HistogramCell {
    let cell = this.cells.get(k);
    if (!cell) this.cells.set(k, (cell = { counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    return cell;
  }
}

export class MetricsRegistry {
  private readonly metrics: Metric[] = [];
  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  gauge(name: string, help: string): Gauge {
    return this.add(new Gauge(name, help));
  }
  /** A counter (`_total`) whose value something else keeps, read when scraped. */
  countedBy(name: string, help: string): Gauge {
    return this.add(new Gauge(name, help, 'counter'));
  }
  histogram(name: string, help: string, buckets: number[]): Histogram {
    return this.add(new Histogram(name, help, buckets));
  }
  private add<T extends Metric>(metric: T): T {
    this.metrics.push(metric);
    return metric;
  }
  render(): string {
    return this.metrics.map((m) => m.render()).join('\n') + '\n';
  }
}

/** The metrics every part of Outrigger reports; one object so names are defined in one place. */
export function createMetrics() {
  const registry = new MetricsRegistry();
  return {
    registry,
    requests: registry.counter('outrigger_requests_total', 'Requests answered, by route kind and status class.'),
    requestSeconds: registry.histogram(
      'outrigger_request_duration_seconds',
      'Time from request start to response end, by route kind.',
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    upstreamErrors: registry.counter('outrigger_upstream_errors_total', 'Upstream failures, by kind (unreachable, timeout, aborted).'),
    redisRefusals: registry.counter(
      'outrigger_redis_refusals_total',
      'Requests answered 503 because Redis refused a command, by reason (unreachable, timeout, failover, oom, readonly, loading, masterdown, clusterdown, tryagain, busy, misconf, noreplicas).',
    ),
    authFailures: registry.counter('outrigger_auth_failures_total', 'Rejected credentials, by scheme (basic, apikey) and reason.'),
    keyCache: registry.counter('outrigger_apikey_cache_total', 'API key verifications, by result (hit, miss, negative-hit, unavailable, unconfirmed-hit).'),
    webhookEventsQueued: registry.counter('outrigger_webhook_events_queued_total', 'Events accepted into the in-process webhook queue.'),
    webhookEventsDropped: registry.counter('outrigger_webhook_events_dropped_total', 'Events dropped because the in-process queue was full.'),
    webhookEventsUnreplicated: registry.counter('outrigger_webhook_events_unreplicated_total', 'Events written to a master that fewer replicas than redis.waitForReplicas acknowledged in time.'),
    webhookQueueDepth: registry.gauge('outrigger_webhook_queue_depth', 'Events waiting in the in-process queue for Redis.'),
    webhookDeliveries: registry.counter('outrigger_webhook_deliveries_total', 'Webhook delivery attempts, by type and outcome.'),
    webhooksAutoDisabled: registry.counter('outrigger_webhooks_auto_disabled_total', 'Webhooks disabled after webhooks.disableAfterFailures consecutive failed events.'),
    subscriptionsOpen: registry.gauge('outrigger_graphql_subscriptions_open', 'Open GraphQL subscriptions on this replica, by transport (sse, ws).'),
    webSocketsOpen: registry.gauge('outrigger_graphql_websockets_open', 'Open GraphQL WebSockets on this replica, with or without a subscription (bounded by subscriptions.webSockets).'),
    subscriptionEvents: registry.counter('outrigger_graphql_subscription_events_total', 'Subscription events, by outcome (delivered; dropped: a subscriber closed because it did not read).'),
    graphqlBackendReads: registry.counter('outrigger_graphql_backend_reads_total', 'Backend collection reads made by GraphQL apps.'),
    upstreamSlots: registry.gauge('outrigger_upstream_slots', 'Upstream request slots, by state (in-use, waiting for a free one).'),
    upstreamLimit: registry.gauge(
      'outrigger_upstream_concurrency_limit',
      'Requests allowed in flight to the backend, by origin: the adaptive limit learned from its latency, or upstream.connections (SPEC §13).',
    ),
    upstreamInFlight: registry.gauge('outrigger_upstream_in_flight', 'Requests in flight to the backend, by origin (the pass-through and GraphQL backend calls).'),
    upstreamQueue: registry.gauge('outrigger_upstream_queue_length', 'Requests waiting for a place under the backend limit, by origin.'),
    upstreamBreakerState: registry.gauge('outrigger_upstream_breaker_state', "The backend's circuit breaker, by origin: 0 closed, 1 half-open, 2 open (SPEC §13)."),
    upstreamMinLatency: registry.gauge('outrigger_upstream_min_latency_seconds', 'The minimum backend latency the adaptive limit measures against, by origin.'),
    upstreamRetries: registry.countedBy('outrigger_upstream_retries_total', 'Requests sent again after their connection failed (the retry budget), by origin.'),
    requestBufferBytes: registry.gauge(
      'outrigger_request_buffer_bytes',
      'Bytes reserved by request bodies read in full: before they take an upstream slot (upstream.bufferBodyBytes), or by an own route; at most upstream.bufferTotalBytes.',
    ),
    traceSpansExported: registry.counter('outrigger_trace_spans_exported_total', 'Trace spans the OTLP collector accepted (telemetry: configured).'),
    traceSpansDropped: registry.counter(
      'outrigger_trace_spans_dropped_total',
      'Trace spans lost: the export queue was full (telemetry.maxQueueSize), or the collector refused, failed or did not answer in time.',
    ),
    redisUp: registry.gauge('outrigger_redis_up', '1 when Redis is ready for this service (on a cluster or Sentinel: the probe behind /_health/ready).'),
    rateLimited: registry.counter('outrigger_rate_limited_total', 'Requests refused by a rate limit or quota (429), by policy name (never a key, user or address).'),
    rateLimitRedisUnavailable: registry.counter(
      'outrigger_rate_limit_redis_unavailable_total',
      'Times rate limits lost Redis and fell back to limits.onRedisUnavailable (local counters, allow or deny).',
    ),
    cacheLookups: registry.counter('outrigger_cache_lookups_total', 'Reads a cache rule covered, by rule and result (hit, miss, revalidated, bypass).'),
    cacheStores: registry.counter('outrigger_cache_stores_total', 'Backend answers stored in the response cache, by rule.'),
    cacheEvictions: registry.counter('outrigger_cache_evictions_total', 'Cached answers pushed out for room (cache.maxBytes), by rule.'),
    cacheInvalidations: registry.counter('outrigger_cache_invalidations_total', 'Drops of cached reads, by source (write, replica, purge, redis-lost).'),
    cacheBytes: registry.gauge('outrigger_cache_bytes', 'Bytes held by the response cache, by rule (at most cache.maxBytes together).'),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
