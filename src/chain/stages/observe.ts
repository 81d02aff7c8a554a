/**
 * observe: what the operator and the features see of a request. Opens before any stage runs (the
 * observers decide whether they want this request: webhooks, recordings) and closes once the
 * response has: the request metrics, the observers' finish (the webhook tee, a span of its own
 * when the trace records), the debug request line.
 */
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import { RequestMetrics } from '../../observability/request-metrics.js';
import { observeOwnRoute, type RequestObserver } from '../observer.js';
import type { ChainRequest } from '../request.js';
import type { Stage } from '../stage.js';

export interface ObserveParts {
  observer: RequestObserver | null;
  metrics: Metrics;
  logger: Logger;
}

export function observeStage({ observer, metrics, logger }: ObserveParts): Stage {
  const requestMetrics = new RequestMetrics(metrics);
  // Decided once: at info level (the default) the request path builds no log objects at all.
  const logRequests = logger.isLevelEnabled('debug');
  const logRequest = (request: ChainRequest, completed: boolean) =>
    logger.debug(
      {
        requestId: request.id,
        trace_id: request.trace!.traceId,
        req: { method: request.method, path: request.rawPath, headers: request.req.headers, clientIp: request.clientIp },
        res: { statusCode: request.res.statusCode },
        user: request.principal.id,
        via: request.principal.via,
        ms: Math.round(request.elapsedSeconds() * 1000),
        completed,
      },
      'request',
    );
  return {
    name: 'observe',
    open(request) {
      const route = request.route;
      // A preflight (stages/cors.ts, opened before this stage) is not evaluated against webhooks (SPEC §15).
      const observed = route?.unobserved || request.preflight || !observer ? null : observer.begin(request);
      request.observed = observed;
      if (observed && route) observeOwnRoute(request, observed);
    },
    close(request, completed) {
      if (completed) requestMetrics.record(request.routeKind, request.res.statusCode, request.elapsedSeconds());
      // An answer of the idempotency record (SPEC §14: a replay, a 409/422/503) ran nothing: no webhook is evaluated against it.
      const observed = request.idempotencyAnswered ? null : request.observed;
      if (observed) {
        const trace = request.trace!;
        const tee = trace.recording ? trace.child('webhook tee', 'internal') : undefined;
        observed.finish(request, completed);
        tee?.end();
      }
      if (logRequests) logRequest(request, completed);
    },
  };
}
