/**
 * trace: the request's trace (SPEC §9), begun before any stage runs and ended last: a server span
 * when exporting, else the propagated context only. Probes and scrapes are never recorded. The
 * other stages' spans come from chain/traced.ts's wrapper, not from this file.
 */
import type { RequestScope } from '../../http/scope.js';
import { Tracing, type RequestTrace } from '../../observability/tracing/tracing.js';
import type { Stage } from '../stage.js';

declare module '../../http/scope.js' {
  interface RequestScope {
    /** The trace stage's slot, set before any other stage runs: own routes and features start children from it. */
    trace: RequestTrace | undefined;
  }
}

export function traceStage(tracing: Tracing | undefined): Stage {
  const unrecorded = Tracing.propagationOnly();
  const tracer = tracing ?? unrecorded;
  return {
    name: 'trace',
    open(request) {
      const route = request.route;
      // Probes and scrapes (every few seconds, from the platform) are propagated, never recorded.
      const chosen = route?.kind === 'health' || route?.kind === 'metrics' ? unrecorded : tracer;
      const h = request.req.headers;
      const trace = (request.trace = !chosen.exporting
        ? chosen.propagate(h.traceparent)
        : chosen.begin({
            method: request.method,
            path: request.rawPath,
            scheme: request.secure ? 'https' : 'http',
            clientIp: request.clientIp,
            traceparent: h.traceparent,
            tracestate: h.tracestate,
            userAgent: h['user-agent'],
            host: h.host,
          }));
      if (route && trace.recording) trace.rename(`${request.method} ${route.prefix}`, route.prefix);
    },
    close(request, completed) {
      const trace = request.trace!;
      if (trace.recording) endServerSpan(trace, request, completed);
      else trace.end();
    },
  };
}

/** Attributes known only at the end, set on a recorded server span only. */
function endServerSpan(trace: RequestTrace, scope: RequestScope, completed: boolean): void {
  trace.set('outrigger.request_id', scope.id);
  trace.set('outrigger.route', scope.routeKind);
  trace.set('outrigger.auth.via', scope.principal.via);
  if (!completed) trace.fail('client_closed', 'the client closed the connection before the answer was complete');
  trace.end(completed ? scope.res.statusCode : undefined);
}
