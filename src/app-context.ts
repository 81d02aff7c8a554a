import type { Redis } from 'ioredis';
import type { AccessControl } from './access/permissions/access-control.js';
import type { PermissionDocument } from './access/permissions/permission-document.js';
import type { Principal } from './principal/principal.js';
import type { IdentityPlan } from './access/identity/identity-propagation.js';
import type { OutriggerConfig } from './config/types.js';
import type { Exchange } from './condition/index.js';
import type { FeatureStates } from './features/feature-states.js';
import type { RequestScope } from './http/scope.js';
import type { Logger } from './observability/logger.js';
import type { RunningCache } from './cache/start.js';
import type { Metrics } from './observability/metrics.js';
import type { Tracing } from './observability/tracing/tracing.js';
import type { ChangeBus } from './store/change-bus.js';
import type { RedisConnections } from './store/connections.js';
import type { DocumentStore } from './store/document-store.js';
import type { RedisKeys } from './store/keys.js';
import type { RateLimiter } from './limits/limiter.js';
import type { Draining } from './util/draining.js';
import type { RedisIdempotencyStore } from './idempotency/store.js';
import { BackendGuards } from './proxy/guard/backend-guard.js';
import { BREAKER_STATE_VALUE } from './proxy/guard/breaker.js';

/** What every feature module is built from: the shared parts, created once in app.ts. */
export interface AppContext {
  config: OutriggerConfig;
  logger: Logger;
  metrics: Metrics;
  /** Traces (SPEC §9): propagation always, export when configured. */
  tracing: Tracing;
  redis: Redis;
  connections: RedisConnections;
  keys: RedisKeys;
  bus: ChangeBus;
  features: FeatureStates;
  permissions: DocumentStore<PermissionDocument>;
  /** The document stores' version poll when not the default (StartOptions.documentPollMs; tests). */
  documentPollMs?: number;
  acl: AccessControl<Exchange>;
  exchangeFor(scope: RequestScope): Exchange;
  /** Admin roles or an allowing permission; throws 401/403. */
  authorizeOwnRoute(scope: RequestScope): void;
  planIdentity(principal: Principal): IdentityPlan;
  /** The response cache (SPEC §12; src/cache/), in every serving process; it runs (`armed`) with `cache.rules`, `strong`, or an app's `descriptor.cache`. GraphQL's reads and writes use it too. */
  responseCache?: RunningCache;
  /** Idempotency records (SPEC §14; src/idempotency/), shared by every door that honours Idempotency-Key; only in a serving process. */
  idempotency?: RedisIdempotencyStore;
  /** Rate limits and key usage (SPEC §10; src/limits/); only in a serving process. */
  limits?: RateLimiter;
  /**
   * The graceful shutdown as features see it (src/shutdown.ts): `draining` from the first SIGTERM;
   * `onStopAccepting(cb)` to end long-lived streams (subscriptions) with a reconnect hint.
   */
  draining: Draining;
  /** Checks a user id and password like a Basic sign-in (brute-force guard included); throws 401/429. Only in a serving process. */
  signIn?(id: string, password: string, clientIp: string): Promise<Principal>;
  /** SPEC §13: one line, adaptive limit, breaker and retry budget per backend origin, shared by the pass-through and GraphQL. */
  backendGuards: BackendGuards;
}

/** The backend guards, each shown in the metrics and its breaker's transitions logged once each. */
export function createBackendGuards(upstream: OutriggerConfig['upstream'], logger: Logger, metrics: Metrics): BackendGuards {
  return new BackendGuards(upstream, {
    created(guard) {
      const labels = { origin: guard.origin };
      const { slots, limit, breaker } = guard;
      metrics.upstreamLimit.track(() => slots.currentLimit, labels);
      metrics.upstreamInFlight.track(() => slots.activeCount, labels);
      metrics.upstreamQueue.track(() => slots.waitingCount, labels);
      metrics.upstreamBreakerState.track(() => BREAKER_STATE_VALUE[breaker.state], labels);
      if (limit) metrics.upstreamMinLatency.track(() => (Number.isFinite(limit.minRtt) ? limit.minRtt / 1000 : 0), labels);
      metrics.upstreamRetries.track(() => guard.retries, labels);
    },
    breaker(origin, { from, to, reason }) {
      const line = `the backend's circuit breaker moved from ${from} to ${to}: ${reason}`;
      if (to === 'closed') logger.info({ origin, breaker: to }, line);
      else logger.warn({ origin, breaker: to }, line);
    },
  });
}
