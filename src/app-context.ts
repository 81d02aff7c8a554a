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
  /** The response cache (SPEC §12; src/cache/), when `cache.rules` has rules; only in a serving process. GraphQL's reads and writes use it too. */
  responseCache?: RunningCache;
  /** Rate limits and key usage (SPEC §10; src/limits/); only in a serving process. */
  limits?: RateLimiter;
  /**
   * The graceful shutdown as features see it (src/shutdown.ts): `draining` from the first SIGTERM;
   * `onStopAccepting(cb)` to end long-lived streams (subscriptions) with a reconnect hint.
   */
  draining: Draining;
  /** Checks a user id and password like a Basic sign-in (brute-force guard included); throws 401/429. Only in a serving process. */
  signIn?(id: string, password: string, clientIp: string): Promise<Principal>;
}
