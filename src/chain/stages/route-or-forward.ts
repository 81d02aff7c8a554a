/**
 * own route or forward: the request is answered, by the own route its path names (keys,
 * GraphQL, admin, OAuth, probes) or by the upstream through the forwarder (SPEC §2). The last
 * stage: a new concern that may answer first (a response cache) is a stage before it.
 */
import type { IncomingMessage } from 'node:http';
import type { OwnRoute } from '../../http/route-table.js';
import { sendWatch } from '../../http/respond.js';
import { spanPath } from '../../observability/tracing/tracing.js';
import { higherPriority, priorityRank } from '../../principal/priority.js';
import type { Forwarder } from '../../proxy/forwarder.js';
import { tappedBody } from '../observer.js';
import type { ChainRequest } from '../request.js';
import type { Stage, Step } from '../stage.js';
import { corsResponseFilter } from './cors.js';

export interface RouteOrForwardParts {
  forwarder: Forwarder;
  /** listen.sendTimeoutMs: an own route's answer the client stops reading is cut after this long without progress, as the forwarder cuts a proxied one. */
  sendTimeoutMs: number;
}

export function routeOrForwardStage({ forwarder, sendTimeoutMs }: RouteOrForwardParts): Stage {
  const watchSend = sendWatch(sendTimeoutMs);
  const upstream = new URL(forwarder.origin);
  const upstreamPort = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));

  /** An own route: the rate-limit headers go on its answer by setHeader (the forwarder puts them in its head instead). */
  function ownRoute(request: ChainRequest, route: OwnRoute): Step {
    const res = request.res;
    watchSend(res);
    const limits = request.rateLimitHeaders;
    if (limits) for (const name in limits) res.setHeader(name, limits[name]!);
    return route.handle(request);
  }

  /** SPEC §9: the backend's traceparent names our client span, or is the one we started. */
  function traceparentFor(request: ChainRequest): string | undefined {
    const trace = request.trace!;
    if (!trace.recording) return trace.replacesClientHeader ? trace.traceparent : undefined;
    const span = (request.upstreamSpan = trace.child(`${request.method} upstream`, 'client', () => ({
      'http.request.method': request.method,
      'server.address': upstream.hostname,
      'server.port': upstreamPort,
      'url.full': upstream.origin + spanPath(request.rawPath),
    })));
    return span.traceparent;
  }

  function forward(request: ChainRequest): void {
    const { req, res, observed } = request;
    const plan = request.plan!;
    if (res.destroyed) return; // the client left while we were deciding
    if (observed && Buffer.isBuffer(plan.body)) observed.onRequestData(plan.body);
    const traceparent = traceparentFor(request);
    // Field by field rather than spreading the plan: one object shape for every request.
    request.abortUpstream = forwarder.forward(
      {
        req,
        res,
        method: request.method,
        target: plan.target ?? request.rawUrl,
        requestId: request.id,
        clientIp: request.clientIp,
        peerTrusted: request.peerTrusted,
        secure: request.secure,
        removeRequestHeaders: plan.removeRequestHeaders,
        setRequestHeaders: traceparent ? { ...plan.setRequestHeaders, traceparent } : plan.setRequestHeaders,
        body: plan.body ?? (observed && hasBody(req) ? tappedBody(req, observed) : undefined),
        // A cross-origin answer carries Outrigger's Access-Control-* (set at the cors stage's open), not the backend's.
        filterResponseHeader: request.crossOrigin ? corsResponseFilter(plan.filterResponseHeader) : plan.filterResponseHeader,
        rewrite: plan.rewrite,
        observer: observed ?? undefined,
        // A covered response carries our RateLimit headers over the backend's (SPEC §10); a cached path's, its Cache-Status too.
        responseHeaders: plan.responseHeaders ?? request.rateLimitHeaders,
        capture: plan.capture,
        // SPEC §13: the highest class of the key, the covering rate-limit policies and the permission.
        priority: priorityRank(higherPriority(higherPriority(request.principal.priority, request.ratePriority), request.permission?.priorityClass)),
      },
      request.fail,
    );
  }

  return {
    name: 'own route or forward',
    run(request) {
      if (request.route) return ownRoute(request, request.route);
      // An observer may read something first (the written document's state, for listeners); otherwise forwarded at once.
      const first = request.observed?.beforeForward?.();
      if (first) return first.then(() => forward(request));
      forward(request);
    },
    failed(request, error) {
      const span = request.upstreamSpan;
      if (span === undefined) return;
      span.fail((error as { code?: string }).code ?? 'error', (error as Error).message);
      span.end();
      request.upstreamSpan = undefined;
    },
    close(request, completed) {
      if (!completed) request.abortUpstream?.();
      request.upstreamSpan?.end(completed ? request.res.statusCode : undefined);
    },
  };
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
}
