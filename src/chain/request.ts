/**
 * One request on its way through the chain: the transport's RequestScope (what own routes and
 * features see) and the slots only the chain's stages read, each typed and named after the stage
 * that writes it. One object per request: a subclass rather than a second object beside the scope.
 */
import type { ProxyPlan } from '../proxy/forwarder.js';
import type { SpanHandle } from '../observability/tracing/tracing.js';
import { RequestScope } from '../http/scope.js';
import type { OwnRoute } from '../http/route-table.js';
import type { ObservedRequest } from './observer.js';
import type { CacheExchange } from '../cache/response-cache.js';
import type { IdempotencyTicket } from '../idempotency/store.js';

const unanswered = (): void => {};

export class ChainRequest extends RequestScope {
  /** The handler, from the route table: the own route this path names, or undefined (proxied). */
  route: OwnRoute | undefined = undefined;
  /** The handler, from the client-ip resolver: the peer is a trusted proxy (its X-Forwarded-For is kept). */
  peerTrusted = false;
  /** The observe stage: what watches this request (webhooks, recordings), or null. */
  observed: ObservedRequest | null = null;
  /** The cors stage: an `Origin` on a CORS path; the forward stage drops the backend's Access-Control-* (stages/cors.ts). */
  crossOrigin = false;
  /** The cors stage: a browser's preflight, answered by the cors stage and not observed. */
  preflight = false;
  /** The plan stage: what the features change about a proxied request. */
  plan: ProxyPlan | undefined = undefined;
  /** The response cache stage: a read's fill or a write's pending drop, until the response closes. */
  cacheExchange: CacheExchange | undefined = undefined;
  /** The idempotency stage: a keyed write's run, until its answer is recorded or its record released. */
  idempotentRun: { readonly ticket: IdempotencyTicket; settled: boolean } | undefined = undefined;
  /** The forward stage: cancels the upstream exchange wherever it is (the client went away). */
  abortUpstream: (() => void) | undefined = undefined;
  /** The forward stage: the upstream call's client span, only while one is recorded. */
  upstreamSpan: SpanHandle | undefined = undefined;
  /** The handler: answers a failure of any stage, or of the upstream (one function per request, the forwarder calls it back). */
  fail: (error: unknown) => void = unanswered;
}
