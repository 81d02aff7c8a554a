import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The standard `process_*` and `nodejs_*` series (prom-client's default metrics: CPU, memory,
 * heap spaces, event-loop lag, GC, handles, file descriptors), the ones Prometheus users' Node
 * dashboards already query. One registry per process, created with the metrics route: these describe
 * the process, so two apps in one process (tests) share them, and collectDefaultMetrics starts
 * its event-loop monitor and GC observer once. Outrigger's own series stay in metrics.ts, whose
 * hot path is cheaper than prom-client's (docs/decisions.md, "Metrics: prom-client").
 */
let registry: Registry | undefined;

export function processRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}

/** The default series in Prometheus text format; prom-client's event-loop lag starts over at each scrape. */
export function renderProcessMetrics(): Promise<string> {
  return processRegistry().metrics();
}
