import type { CounterSeries, HistogramSeries, Metrics } from './metrics.js';

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/**
 * `outrigger_requests_total` and `outrigger_request_duration_seconds` for every answered
 * request. The series of each route kind and status class are bound on first use, so a request
 * pays two array reads and two additions, not a label object and a key lookup per metric.
 * `Route` is the chain's route kind (http/scope's RouteKind), a type parameter because
 * observability sits below http/.
 */
export class RequestMetrics<Route extends string = string> {
  private readonly byRoute = new Map<Route, { seconds: HistogramSeries; counts: Array<CounterSeries | undefined> }>();

  constructor(private readonly metrics: Metrics) {}

  record(route: Route, statusCode: number, seconds: number): void {
    let series = this.byRoute.get(route);
    if (!series) this.byRoute.set(route, (series = { seconds: this.metrics.requestSeconds.series({ route }), counts: [] }));
    const classIndex = Math.floor(statusCode / 100) - 1;
    const index = classIndex >= 0 && classIndex < STATUS_CLASSES.length ? classIndex : STATUS_CLASSES.length;
    const counter = (series.counts[index] ??= this.metrics.requests.series({ route, status: STATUS_CLASSES[index] ?? 'other' }));
    counter.inc();
    series.seconds.observe(seconds);
  }
}
