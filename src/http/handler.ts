import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { badRequest, OutriggerError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Principal } from '../principal/principal.js';
import type { Forwarder, ProxyPlan } from '../proxy/forwarder.js';
import { repeatedSingleHeader } from '../proxy/headers.js';
import type { ClientIpResolver } from './client-ip.js';
import { sendError, sendWatch } from './respond.js';
import { releaseBody } from './body.js';
import { DEFAULT_SEND_TIMEOUT_MS } from '../proxy/forward-request.js';
import { RequestScope } from './scope.js';
import { hasDotSegments, type OwnRoute, type RouteTable } from './route-table.js';
import { observeOwnRoute, tappedBody, type RequestObserver } from './observe.js';
import { RequestMetrics } from '../observability/request-metrics.js';
import { redisRefusal, type RedisRefusal } from '../store/redis-errors.js';
import { spanPath, Tracing, type RequestTrace, type SpanHandle } from '../observability/tracing/tracing.js';

/** A refusal of one reason is logged at once, then at most once per this long (with a count). */
const REFUSAL_LOG_EVERY_MS = 10_000;

/** Who the caller is; throws an OutriggerError for 401/429/503. */
export type Authenticate = (scope: RequestScope) => Promise<Principal> | Principal;
/** May the principal make this proxied request? Throws 401/403; sets scope.permission. */
export type AuthorizeProxy = (scope: RequestScope) => Promise<void> | void;
/** What the features change about a proxied request (identity headers, readFilter, projection). Synchronous. */
export type PlanProxy = (scope: RequestScope) => ProxyPlan;

export interface HandlerParts {
  routes: RouteTable;
  forwarder: Forwarder;
  clientIp: ClientIpResolver;
  authenticate: Authenticate;
  authorizeProxy: AuthorizeProxy;
  planProxy: PlanProxy;
  /** Rate limits and quotas (SPEC §10; src/limits/): after authentication, before the route or the forwarder; throws 429/503. */
  limit?: (scope: RequestScope) => Promise<void> | void;
  observer: RequestObserver | null;
  metrics: Metrics;
  logger: Logger;
  /** Traces (SPEC §9); propagation only when absent. */
  tracing?: Tracing;
  /** listen.sendTimeoutMs: an own route's answer the client stops reading is cut after this long without progress, as the forwarder cuts a proxied one. */
  sendTimeoutMs?: number;
}

/**
 * The request chain, in the order a reader should see it (oauth2-proxy's habit):
 * scope → public routes → authentication → own route | (authorization → proxy) → observers.
 */
export function createRequestHandler(parts: HandlerParts) {
  const { routes, forwarder, metrics, logger, limit } = parts;
  const watchSend = sendWatch(parts.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS);
  // Bodies read whole anywhere (own routes, the ACL's body predicates) count where the forwarder's buffering does.
  const bodyReservations = forwarder.buffers;
  const requestMetrics = new RequestMetrics(metrics);
  // Decided once: at info level (the default) the request path builds no log objects at all.
  const logRequests = logger.isLevelEnabled('debug');
  const refusalsLogged = new Map<string, { at: number; since: number }>();
  const unrecorded = Tracing.propagationOnly();
  const tracing = parts.tracing ?? unrecorded;
  const upstream = new URL(forwarder.origin);
  const upstreamPort = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
  // The client gets 503 (respond.ts); the operator gets a counter and a warning saying what Redis answered.
  const reportRefusal = (refusal: RedisRefusal, error: Error, scope: RequestScope) => {
    metrics.redisRefusals.inc({ reason: refusal.reason });
    const now = Date.now();
    const last = refusalsLogged.get(refusal.reason);
    if (last !== undefined && now - last.at < REFUSAL_LOG_EVERY_MS) {
      last.since++;
      return;
    }
    refusalsLogged.set(refusal.reason, { at: now, since: 0 });
    logger.warn(
      { requestId: scope.id, trace_id: scope.trace?.traceId, method: scope.method, path: scope.rawPath, reason: refusal.reason, redis: error.message, alsoRefusedSinceLastLine: last?.since ?? 0 },
      'Redis refused a command; answered 503 with Retry-After (outrigger_redis_refusals_total)',
    );
  };

  return function handleRequest(req: IncomingMessage, res: ServerResponse, finished?: () => void): void {
    const peer = req.socket.remoteAddress ?? '';
    const { ip, peerTrusted } = parts.clientIp(peer, req.headers['x-forwarded-for'], req.socket.remotePort);
    const scope = new RequestScope(req, res, ip, (req.socket as TLSSocket).encrypted === true);
    scope.bodyReservations = bodyReservations;
    // Decided on the canonical path; a path without one matches nothing and is refused in run().
    const route = scope.pathProblem === undefined ? routes.match(scope.path) : undefined;
    const h = req.headers;
    // Probes and scrapes (every few seconds, from the platform) are propagated, never recorded.
    const tracer = route?.kind === 'health' || route?.kind === 'metrics' ? unrecorded : tracing;
    const trace: RequestTrace = (scope.trace = !tracer.exporting
      ? tracer.propagate(h.traceparent)
      : tracer.begin({
          method: scope.method,
          path: scope.rawPath,
          scheme: scope.secure ? 'https' : 'http',
          clientIp: ip,
          traceparent: h.traceparent,
          tracestate: h.tracestate,
          userAgent: h['user-agent'],
          host: h.host,
        }));

    if (route) {
      scope.routeKind = route.kind;
      res.setHeader('x-request-id', scope.id);
      if (trace.recording) trace.rename(`${scope.method} ${route.prefix}`, route.prefix);
    }
    const observed = route?.unobserved || !parts.observer ? null : parts.observer.begin(scope);
    if (observed && route) observeOwnRoute(scope, observed);

    let abortUpstream: (() => void) | undefined;
    /** The upstream call's client span (only while one is recorded). */
    let upstreamSpan: SpanHandle | undefined;
    // One listener per request for everything that happens at the end ('close' follows 'finish').
    // `on`, not `once`: a response closes once, and `once` allocates a wrapper per request.
    res.on('close', () => {
      finished?.();
      if (scope.heldBodyBytes !== 0) releaseBody(scope);
      const completed = res.writableFinished;
      if (!completed) abortUpstream?.();
      if (completed) requestMetrics.record(scope.routeKind, res.statusCode, scope.elapsedSeconds());
      upstreamSpan?.end(completed ? res.statusCode : undefined);
      if (observed) {
        const tee = trace.recording ? trace.child('webhook tee', 'internal') : undefined;
        observed.finish(scope, completed);
        tee?.end();
      }
      if (trace.recording) endServerSpan(trace, scope, completed);
      else trace.end();
      if (logRequests) {
        logger.debug(
          {
            requestId: scope.id,
            trace_id: trace.traceId,
            req: { method: scope.method, path: scope.rawPath, headers: req.headers, clientIp: scope.clientIp },
            res: { statusCode: res.statusCode },
            user: scope.principal.id,
            via: scope.principal.via,
            ms: Math.round(scope.elapsedSeconds() * 1000),
            completed,
          },
          'request',
        );
      }
    });

    const fail = (error: unknown) => {
      const status = (error as { status?: number }).status;
      if (upstreamSpan) {
        upstreamSpan.fail((error as { code?: string }).code ?? 'error', (error as Error).message);
        upstreamSpan.end();
        upstreamSpan = undefined;
      }
      if (status === 499) return; // the client left; nobody to answer
      if (status === 502 || status === 504) {
        metrics.upstreamErrors.inc({ kind: status === 504 ? 'timeout' : 'unreachable' });
        // Operators must see each upstream failure at the default level, not only as a counter.
        logger.info({ requestId: scope.id, trace_id: trace.traceId, method: scope.method, path: scope.rawPath, status, code: (error as { code?: string }).code, err: (error as Error).message }, 'upstream failure');
      }
      if (!(error instanceof OutriggerError)) {
        const refusal = redisRefusal(error);
        if (refusal !== null) reportRefusal(refusal, error as Error, scope);
      }
      if (!res.headersSent) {
        res.setHeader('x-request-id', scope.id);
        // A rate limit's 429, and any other error of a covered request, carry the rate-limit headers too (SPEC §10).
        const limits = scope.rateLimitHeaders;
        if (limits) for (const name in limits) res.setHeader(name, limits[name]!);
      }
      sendError(res, error, logger, scope.id, trace.traceId);
    };
    // The stages return a promise only when they have something to wait for (a cold key, a body
    // to read, the upstream); a known caller goes from request to dispatch without a microtask.
    try {
      const pending = run();
      if (pending) pending.catch(fail);
    } catch (error) {
      fail(error);
    }

    function run(): Promise<void> | void {
      if (hasDotSegments(scope.rawPath)) throw badRequest('the path contains "." or ".." segments; send the normalised path');
      if (scope.pathProblem !== undefined) throw badRequest(scope.pathProblem);
      // Decisions read the first of each; the forwarded raw list would carry every copy (issue 34).
      const repeated = repeatedSingleHeader(req.rawHeaders);
      if (repeated !== undefined) throw badRequest(`the request has more than one ${repeated === 'host' ? 'Host' : 'Authorization'} header; send exactly one`);
      if (route?.public) {
        // Answered before authentication (sign-in, metadata): only `by: client` and `by: service` policies cover them.
        const limited = limit?.(scope);
        return limited ? limited.then(() => ownRoute(route)) : ownRoute(route);
      }
      if (trace.recording) return tracedAuthentication();
      const principal = parts.authenticate(scope);
      if (principal instanceof Promise)
        return principal.then((p) => {
          scope.principal = p;
          return afterAuthentication();
        });
      scope.principal = principal;
      return afterAuthentication();
    }

    /** The same, with a span: `outrigger.auth.source` says whether it waited (Redis, a users lookup) or not (a cache). */
    function tracedAuthentication(): Promise<void> | void {
      const span = trace.child('authenticate', 'internal');
      const done = (p: Principal, source: string) => {
        scope.principal = p;
        span.set('outrigger.auth.via', p.via);
        span.set('outrigger.auth.source', p.via === 'anonymous' ? 'none' : source);
        span.end();
      };
      const failed = (error: unknown) => {
        span.fail(String((error as { status?: number }).status ?? 'error'), (error as Error).message);
        span.end();
        throw error;
      };
      let principal;
      try {
        principal = parts.authenticate(scope);
      } catch (error) {
        return failed(error);
      }
      if (!(principal instanceof Promise)) {
        done(principal, 'cache');
        return afterAuthentication();
      }
      return principal.then((p) => {
        done(p, p.via === 'apikey' ? 'redis' : 'verified');
        return afterAuthentication();
      }, failed);
    }

    function afterAuthentication(): Promise<void> | void {
      const limited = limit?.(scope);
      return limited ? limited.then(afterLimits) : afterLimits();
    }

    /** An own route: the rate-limit headers go on its answer by setHeader (the forwarder puts them in its head instead). */
    function ownRoute(own: OwnRoute): Promise<void> | void {
      watchSend(res);
      const limits = scope.rateLimitHeaders;
      if (limits) for (const name in limits) res.setHeader(name, limits[name]!);
      return own.handle(scope);
    }

    function afterLimits(): Promise<void> | void {
      if (route) return ownRoute(route);
      const authorized = parts.authorizeProxy(scope);
      return authorized instanceof Promise ? authorized.then(proxy) : proxy();
    }

    function proxy(): void {
      const plan = parts.planProxy(scope);
      if (res.destroyed) return; // the client left while we were deciding
      if (observed && Buffer.isBuffer(plan.body)) observed.onRequestData(plan.body);
      // SPEC §9: the backend's traceparent names our client span, or is the one we started.
      let traceparent: string | undefined;
      if (trace.recording) {
        upstreamSpan = trace.child(`${scope.method} upstream`, 'client', () => ({
          'http.request.method': scope.method,
          'server.address': upstream.hostname,
          'server.port': upstreamPort,
          'url.full': upstream.origin + spanPath(scope.rawPath),
        }));
        traceparent = upstreamSpan.traceparent;
      } else if (trace.replacesClientHeader) traceparent = trace.traceparent;
      // Field by field rather than spreading the plan: one object shape for every request.
      abortUpstream = forwarder.forward(
        {
          req,
          res,
          method: scope.method,
          target: plan.target ?? scope.rawUrl,
          requestId: scope.id,
          clientIp: scope.clientIp,
          peerTrusted,
          secure: scope.secure,
          removeRequestHeaders: plan.removeRequestHeaders,
          setRequestHeaders: traceparent ? { ...plan.setRequestHeaders, traceparent } : plan.setRequestHeaders,
          body: plan.body ?? (observed && hasBody(req) ? tappedBody(req, observed) : undefined),
          filterResponseHeader: plan.filterResponseHeader,
          rewrite: plan.rewrite,
          observer: observed ?? undefined,
          // A covered response carries our RateLimit headers over the backend's (SPEC §10).
          responseHeaders: scope.rateLimitHeaders,
        },
        fail,
      );
    }
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

function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
}
