// The operator's probes over the transport. Not in observability/: that folder sits below http/
// (the transport logs and traces through it), so routes that answer requests live up here.
import { sendJson } from '../http/respond.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import { methodNotAllowed, notFound } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { processRegistry, renderProcessMetrics } from '../observability/process-metrics.js';

/** `/_health/live`, `/_health/ready` (Redis reachable, config loaded): public, never proxied. */
export function healthRoute(prefix: string, isReady: () => { ready: boolean; checks: Record<string, string> }): OwnRoute {
  return {
    kind: 'health',
    prefix,
    public: true,
    unobserved: true,
    handle(scope: RequestScope) {
      if (scope.method !== 'GET' && scope.method !== 'HEAD') throw methodNotAllowed(['GET', 'HEAD']);
      const sub = scope.path.slice(prefix.length);
      if (sub === '/live') return sendJson(scope.res, 200, { status: 'live' });
      if (sub === '/ready') {
        const { ready, checks } = isReady();
        return sendJson(scope.res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
      }
      throw notFound(`no such health check; use ${prefix}/live or ${prefix}/ready`);
    },
  };
}

export function metricsRoute(prefix: string, metrics: Metrics): OwnRoute {
  // Started with the route, not at the first scrape: the event-loop lag covers the time before it.
  processRegistry();
  return {
    kind: 'metrics',
    prefix,
    public: true,
    unobserved: true,
    async handle(scope: RequestScope) {
      if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
      // Outrigger's series, then prom-client's process_* and nodejs_* (no name is in both).
      const body = metrics.registry.render() + (await renderProcessMetrics());
      scope.res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      scope.res.end(body);
    },
  };
}
