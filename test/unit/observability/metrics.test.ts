import { describe, expect, it } from 'vitest';
import { MetricsRegistry, createMetrics } from '../../../src/observability/metrics.js';
import { RequestMetrics } from '../../../src/observability/request-metrics.js';

describe('metrics registry (Prometheus text format)', () => {
  it('counts by label set, through labels or a bound series, into one value', () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter('t_total', 'Things.');
    const bound = counter.series({ kind: 'a' });
    bound.inc();
    bound.inc(2);
    counter.inc({ kind: 'a' });
    counter.inc({ kind: 'b"\n\\' });
    expect(counter.get({ kind: 'a' })).toBe(4);
    expect(registry.render()).toBe(['# HELP t_total Things.', '# TYPE t_total counter', 't_total{kind="a"} 4', 't_total{kind="b\\"\\n\\\\"} 1', ''].join('\n'));
  });

  it('renders histogram buckets cumulatively, with +Inf, sum and count', () => {
    const registry = new MetricsRegistry();
    const histogram = registry.histogram('t_seconds', 'Time.', [0.1, 1, 10]);
    const series = histogram.series({ route: 'proxy' });
    for (const v of [0.05, 0.1, 0.5, 5, 50]) series.observe(v);
    histogram.observe(1, { route: 'proxy' });
    expect(histogram.lines()).toEqual([
      't_seconds_bucket{route="proxy",le="0.1"} 2',
      't_seconds_bucket{route="proxy",le="1"} 4',
      't_seconds_bucket{route="proxy",le="10"} 5',
      't_seconds_bucket{route="proxy",le="+Inf"} 6',
      't_seconds_sum{route="proxy"} 56.65',
      't_seconds_count{route="proxy"} 6',
    ]);
  });

  it('records requests by route kind and status class, odd status codes as "other"', () => {
    const metrics = createMetrics();
    const requests = new RequestMetrics(metrics);
    requests.record('proxy', 200, 0.002);
    requests.record('proxy', 204, 0.002);
    requests.record('proxy', 503, 0.2);
    requests.record('keys', 401, 0.001);
    requests.record('proxy', 600, 0.001);
    expect(metrics.requests.get({ route: 'proxy', status: '2xx' })).toBe(2);
    expect(metrics.requests.get({ route: 'proxy', status: '5xx' })).toBe(1);
    expect(metrics.requests.get({ route: 'keys', status: '4xx' })).toBe(1);
    expect(metrics.requests.get({ route: 'proxy', status: 'other' })).toBe(1);
    const text = metrics.registry.render();
    expect(text).toMatch(/^outrigger_request_duration_seconds_count\{route="proxy"\} 4$/m);
    expect(text).toMatch(/^outrigger_request_duration_seconds_bucket\{route="proxy",le="0.0025"\} 3$/m);
  });
});
