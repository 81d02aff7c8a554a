/**
 * The response cache of one process, wired (the composition root calls this once): the cache,
 * its bus on a channel of its own, and the generations in Redis for `consistency: strong`.
 * Null without `cache.rules`: nothing is cached and the request chain has no cache stage.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { OutriggerConfig } from '../config/types.js';
import type { Metrics } from '../observability/metrics.js';
import { ChangeBus } from '../store/change-bus.js';
import type { RedisKeys } from '../store/keys.js';
import { createCacheAdminArea } from './cache-admin.js';
import { connectCacheBus, StrongGenerations } from './invalidation-bus.js';
import { ResponseCache } from './response-cache.js';
import type { CacheScope } from './cache-scope.js';

export interface RunningCache {
  readonly cache: ResponseCache;
  readonly strong: StrongGenerations | null;
  /** A write to `db/collection` that is not a backend's 4xx refusal (status null: no answer, it may have happened) drops its reads; strong: its generation too, before the writer's answer. */
  dropWritten(db: string, collection: string, status: number | null): Promise<void>;
  /** A change heard from the subscription feed: its collection dropped here, before the change is handed on. */
  dropChanged(db: string, collection: string): void;
  /** `<admin>/cache` (cache-admin.ts). */
  readonly adminArea: ReturnType<typeof createCacheAdminArea>;
  stop(): void;
}

export async function startResponseCache(config: OutriggerConfig, parts: { redis: Redis; subscriber: Redis; keys: RedisKeys; metrics: Metrics }): Promise<RunningCache | null> {
  if (config.cache.rules.length === 0) return null;
  const cache = new ResponseCache({ config: config.cache, collectionPath: config.graphql.backend.collectionPath, metrics: parts.metrics });
  const bus = new ChangeBus(parts.redis, parts.subscriber, parts.keys.cacheInvalidations);
  const stop = connectCacheBus(cache, bus, parts.subscriber, randomUUID());
  await bus.start().catch(() => {});
  const strong = config.cache.consistency === 'strong' ? new StrongGenerations(parts.redis, parts.keys) : null;
  return {
    cache,
    strong,
    async dropWritten(db, collection, status) {
      if (status !== null && status >= 400 && status < 500) return;
      const scope: CacheScope = { level: 'collection', db, collection };
      cache.invalidate(scope);
      await strong?.bump(scope).catch(() => {});
    },
    dropChanged: (db, collection) => cache.invalidateCollection(db, collection, 'feed'),
    adminArea: createCacheAdminArea(cache),
    stop,
  };
}
