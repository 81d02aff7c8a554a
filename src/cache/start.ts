/**
 * The response cache of one process, wired (the composition root calls this once in a process
 * that serves): the cache, its bus on a channel of its own, and the generations in Redis for
 * `consistency: strong`.
 *
 * It runs (`armed`) from the start when `cache.rules` has a rule or `consistency` is `strong`,
 * and otherwise from the moment this replica holds a GraphQL app whose descriptor says `cache`
 * (`arm`, graphql/module.ts). Until then the request chain has no cache stage and writes drop
 * nothing: a service that caches nothing pays nothing on the pass-through. Once armed it stays
 * so until the process restarts.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { OutriggerConfig } from '../config/types.js';
import { notFound } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { ChangeBus } from '../store/change-bus.js';
import type { RedisKeys } from '../store/keys.js';
import { AnswerFlights } from './answer-flights.js';
import { createCacheAdminArea } from './cache-admin.js';
import { connectCacheBus, StrongGenerations } from './invalidation-bus.js';
import { ResponseCache } from './response-cache.js';
import { ALL, type CacheScope } from './cache-scope.js';

export interface RunningCache {
  readonly cache: ResponseCache;
  readonly strong: StrongGenerations | null;
  /** Whole GraphQL answers being executed, joined by identical concurrent queries (graphql/serve/answer-cache.ts). */
  readonly answerFlights: AnswerFlights;
  /** Whether the cache runs (the chain has its stage, writes drop): rules, `strong`, or an app's `descriptor.cache` seen. */
  readonly armed: boolean;
  /** Starts the cache if it does not run yet (an app with `descriptor.cache` arrived). Idempotent. */
  arm(): void;
  /** Called once when `arm` starts a cache that did not run (the request chain adds its stage). */
  onArmed(listener: () => void): void;
  /** From now on requests are served: a later `arm` tells the other replicas to drop what they hold (the writes proxied here until then were not announced). */
  serving(): void;
  /** A write to `db/collection` that is not a backend's 4xx refusal (status null: no answer, it may have happened) drops its reads; strong: its generation too, before the writer's answer. */
  dropWritten(db: string, collection: string, status: number | null): Promise<void>;
  /** A change heard from the subscription feed: its collection dropped here, before the change is handed on. */
  dropChanged(db: string, collection: string): void;
  /** `<admin>/cache` (cache-admin.ts); 404 while the cache does not run. */
  readonly adminArea: ReturnType<typeof createCacheAdminArea>;
  stop(): void;
}

export async function startResponseCache(config: OutriggerConfig, parts: { redis: Redis; subscriber: Redis; keys: RedisKeys; metrics: Metrics }): Promise<RunningCache> {
  const cache = new ResponseCache({ config: config.cache, collectionPath: config.graphql.backend.collectionPath, metrics: parts.metrics });
  const bus = new ChangeBus(parts.redis, parts.subscriber, parts.keys.cacheInvalidations);
  const stop = connectCacheBus(cache, bus, parts.subscriber, randomUUID());
  await bus.start().catch(() => {});
  const strong = config.cache.consistency === 'strong' ? new StrongGenerations(parts.redis, parts.keys) : null;
  // `strong` starts at once: its promise (no replica serves a state older than a write anyone has the answer of) holds only if every replica bumps from its first write.
  let armed = config.cache.rules.length > 0 || strong !== null;
  let served = false;
  const armedListeners: Array<() => void> = [];
  const admin = createCacheAdminArea(cache);
  return {
    cache,
    strong,
    answerFlights: new AnswerFlights(),
    get armed() {
      return armed;
    },
    arm() {
      if (armed) return;
      armed = true;
      // The writes this replica proxied before now dropped nothing elsewhere: the others start over.
      if (served) cache.invalidate(ALL);
      for (const listener of armedListeners) listener();
    },
    onArmed: (listener) => void armedListeners.push(listener),
    serving: () => void (served = true),
    async dropWritten(db, collection, status) {
      if (!armed || (status !== null && status >= 400 && status < 500)) return;
      const scope: CacheScope = { level: 'collection', db, collection };
      cache.invalidate(scope);
      await strong?.bump(scope).catch(() => {});
    },
    dropChanged(db, collection) {
      if (armed) cache.invalidateCollection(db, collection, 'feed');
    },
    adminArea(scope, subPath) {
      if (!armed) throw notFound(`no response cache runs on this service: cache.rules is empty and no GraphQL app sets descriptor.cache (docs/caching.md)`, 'NO_CACHE');
      return admin(scope, subPath);
    },
    stop,
  };
}
