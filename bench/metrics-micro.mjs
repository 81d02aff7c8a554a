#!/usr/bin/env node
/**
 * What counting one request costs (docs/decisions.md, "Metrics: prom-client"): the hot path's
 * two updates (`outrigger_requests_total` by route and status class, and the duration histogram
 * by route) through Outrigger's registry (RequestMetrics: series bound once) against prom-client's
 * Counter and Histogram, with labels passed per call and with children bound once by `labels()`.
 * Loaded machines move ns figures: read them beside the pass-through's ~55 µs per request.
 *
 *   npm run build && node bench/metrics-micro.mjs [--iterations 2000000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { Counter, Histogram, Registry } from 'prom-client';

const { values: opts } = parseArgs({ options: { iterations: { type: 'string', default: '2000000' }, rounds: { type: 'string', default: '5' } } });
const iterations = Number(opts.iterations);
const { createMetrics } = await import('../dist/src/observability/metrics.js');
const { RequestMetrics } = await import('../dist/src/observability/request-metrics.js');

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ROUTES = ['proxy', 'keys', 'graphql'];
const STATUSES = [200, 200, 200, 204, 404, 503];
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

function outrigger() {
  const requests = new RequestMetrics(createMetrics());
  return (route, status, seconds) => requests.record(route, status, seconds);
}

function promClient(bound) {
  const registry = new Registry();
  const counter = new Counter({ name: 'outrigger_requests_total', help: 'x', labelNames: ['route', 'status'], registers: [registry] });
  const histogram = new Histogram({ name: 'outrigger_request_duration_seconds', help: 'x', labelNames: ['route'], buckets: BUCKETS, registers: [registry] });
  if (!bound) {
    return (route, status, seconds) => {
      counter.inc({ route, status: CLASSES[Math.floor(status / 100) - 1] ?? 'other' });
      histogram.observe({ route }, seconds);
    };
  }
  // What RequestMetrics does with prom-client: children bound once per route and status class.
  const children = new Map();
  return (route, status, seconds) => {
    let c = children.get(route);
    if (!c) children.set(route, (c = { h: histogram.labels(route), counts: [] }));
    const i = Math.floor(status / 100) - 1;
    (c.counts[i] ??= counter.labels(route, CLASSES[i] ?? 'other')).inc();
    c.h.observe(seconds);
  };
}

function run(record) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) record(ROUTES[i % 3], STATUSES[i % 6], (i % 1000) / 20_000);
  return Number(process.hrtime.bigint() - start) / iterations;
}

const sides = { outrigger: outrigger(), 'prom-client (labels per call)': promClient(false), 'prom-client (bound children)': promClient(true) };
const results = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (const record of Object.values(sides)) run(record); // warm-up: JIT
for (let r = 0; r < Number(opts.rounds); r++) for (const [name, record] of Object.entries(sides)) results[name].push(run(record));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(results.outrigger);
console.log(`| hot path (counter inc + histogram observe per request) | ns/request (median of ${opts.rounds}, min–max) | × outrigger |`);
console.log('|---|---|---|');
for (const [name, xs] of Object.entries(results)) {
  console.log(`| ${name} | ${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}) | ${(median(xs) / base).toFixed(2)} |`);
}
console.log(`\nnode ${process.version}, ${iterations} requests per run`);
