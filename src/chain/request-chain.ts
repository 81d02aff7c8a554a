/**
 * The request chain (README.md): the stages every request crosses, as one ordered list, and the
 * handler node:http calls. The handler only builds the request (scope, route, client address),
 * opens the stages, listens once for the response's close and starts the list.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { CorsConfig } from '../config/cors-config.js';
import type { Authenticate, AuthorizeProxy, PlanProxy } from '../access/chain-hooks.js';
import { releaseBody } from '../http/body.js';
import type { ClientIpResolver } from '../http/client-ip.js';
import type { RouteTable } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import type { Tracing } from '../observability/tracing/tracing.js';
import { createFailureAnswer } from './failure.js';
import { ChainRequest } from './request.js';
import { Chain } from './run.js';
import type { Stage } from './stage.js';
import { authenticateStage } from './stages/authenticate.js';
import { corsStage, type CorsSettings } from './stages/cors.js';
import { authorizeStage } from './stages/authorize.js';
import { headStage } from './stages/head.js';
import { idempotencyStage, type IdempotencyParts } from './stages/idempotency.js';
import { limitStage } from './stages/limit.js';
import { observeStage, type ObserveParts } from './stages/observe.js';
import { planStage } from './stages/plan.js';
import { responseCacheStage, type ResponseCacheParts } from './stages/response-cache.js';
import { routeOrForwardStage, type RouteOrForwardParts } from './stages/route-or-forward.js';
import { traceStage } from './stages/trace.js';

export interface ChainParts extends ObserveParts, RouteOrForwardParts {
  routes: RouteTable;
  clientIp: ClientIpResolver;
  authenticate: Authenticate;
  authorizeProxy: AuthorizeProxy;
  planProxy: PlanProxy;
  /** Rate limits and quotas (SPEC §10; src/limits/): throws 429/503. */
  limit?: (scope: RequestScope) => Promise<void> | void;
  /** `cors:` (SPEC §15): who may call from another origin; a CorsSettings when a reload may swap it. */
  cors: CorsConfig | CorsSettings;
  /** Proxied path prefixes that keep the same-origin policy (the MCP endpoint). */
  corsSameOrigin?: readonly string[];
  /** Traces (SPEC §9); propagation only when absent. */
  tracing?: Tracing;
  /** The response cache (SPEC §12); its stage only while it runs (`armed`: rules, `strong`, an app's `descriptor.cache`). */
  cache?: ResponseCacheParts;
  /** Idempotency keys (SPEC §14); absent in a process that does not serve. */
  idempotency?: IdempotencyParts;
}

/** The request path, in order. A new concern is a new file in stages/ and one line here. */
export function requestStages(parts: ChainParts): Stage[] {
  const stages: Array<Stage | null> = [
    traceStage(parts.tracing),
    corsStage(parts.cors, parts.corsSameOrigin),
    observeStage(parts),
    headStage(),
    authenticateStage(parts.authenticate),
    limitStage(parts.limit),
    authorizeStage(parts.authorizeProxy),
    planStage(parts.planProxy),
    idempotencyStage(parts.idempotency),
    responseCacheStage(parts.cache),
    routeOrForwardStage(parts),
  ];
  return stages.filter((stage): stage is Stage => stage !== null);
}

export function createRequestHandler(parts: ChainParts) {
  const { routes, clientIp } = parts;
  const answerFailure = createFailureAnswer(parts.metrics, parts.logger);
  let chain = new Chain(requestStages(parts), answerFailure);
  // The cache started after the chain was built (an app's descriptor.cache): the list gains its
  // stage. A request already running keeps its list; its close and failure on the new one find no
  // cache exchange and do nothing.
  parts.cache?.onArmed?.(() => (chain = new Chain(requestStages(parts), answerFailure)));
  // Bodies read whole anywhere (own routes, the ACL's body predicates) count where the forwarder's buffering does.
  const bodyReservations = parts.forwarder.buffers;

  return function handleRequest(req: IncomingMessage, res: ServerResponse, finished?: () => void): void {
    const { ip, peerTrusted } = clientIp(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'], req.socket.remotePort);
    const request = new ChainRequest(req, res, ip, (req.socket as TLSSocket).encrypted === true);
    request.bodyReservations = bodyReservations;
    request.peerTrusted = peerTrusted;
    // Decided on the canonical path; a path without one matches nothing and is refused by the head stage.
    const route = request.pathProblem === undefined ? routes.match(request.path) : undefined;
    if (route) {
      request.route = route;
      request.routeKind = route.kind;
      res.setHeader('x-request-id', request.id);
    }
    chain.open(request);
    // One listener per request for everything that happens at the end ('close' follows 'finish').
    // `on`, not `once`: a response closes once, and `once` allocates a wrapper per request.
    res.on('close', () => {
      finished?.();
      if (request.heldBodyBytes !== 0) releaseBody(request);
      chain.close(request, res.writableFinished);
    });
    // Made as a local, then stored: measured, assigning the arrow straight to the field made every
    // request survive young collections (old space grew ~6 KB a request, mark-compacts followed,
    // +30 % CPU on the pass-through); V8 detail, kept by bench/ab.mjs.
    const fail = (error: unknown): void => chain.fail(request, error);
    request.fail = fail;
    chain.start(request);
  };
}
