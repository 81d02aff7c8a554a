/**
 * The response cache across replicas (SPEC §12): a write seen here is published on a pub/sub
 * channel of its own (`keys.cacheInvalidations`, sharded on a Cluster, through ChangeBus) and
 * every other replica drops the same reads when it hears it; `cache.consistency: strong` adds a
 * generation per collection in Redis, bumped before the writer's answer and checked by each hit.
 *
 * A replica that loses its subscription (Redis away, a failover) may miss drops, so it empties
 * its cache and stores nothing until the subscription is back ('resync'), then starts empty.
 */
import type { Redis } from 'ioredis';
import type { ChangeBus, ChangeMessage } from '../store/change-bus.js';
import type { RedisKeys } from '../store/keys.js';
import { documentSlot, slotOf, type CacheScope } from './cache-scope.js';
import type { ResponseCache } from './response-cache.js';

/** `<replica>\n<level>\n<db>\n<collection>[\n<document>]`: small, and no JSON inside the bus's JSON. */
function encode(replica: string, scope: CacheScope): string {
  const fields = [replica, scope.level, scope.level === 'all' ? '' : scope.db, scope.level === 'collection' ? scope.collection : ''];
  if (scope.level === 'collection' && scope.document !== undefined) fields.push(scope.document);
  return fields.join('\n');
}

function decode(id: string): { replica: string; scope: CacheScope } | null {
  const [replica, level, db, collection, document] = id.split('\n');
  if (replica === undefined || db === undefined || collection === undefined) return null;
  if (level === 'all') return { replica, scope: { level: 'all' } };
  if (level === 'db') return { replica, scope: { level: 'db', db } };
  if (level === 'collection') return { replica, scope: document === undefined ? { level: 'collection', db, collection } : { level: 'collection', db, collection, document } };
  return null;
}

/** Tells every replica to drop `scope` (what a replica does for its writes; the CLI's purge). */
export function announceDrop(bus: ChangeBus, replica: string, scope: CacheScope): Promise<void> {
  return bus.publish({ kind: 'response-cache', id: encode(replica, scope) });
}

/** Wires the cache to its bus and to the subscriber connection's state; returns the stop. */
export function connectCacheBus(cache: ResponseCache, bus: ChangeBus, subscriber: Redis, replica: string): () => void {
  const unWrite = cache.onWrite((scope) => void announceDrop(bus, replica, scope));
  const unListen = bus.on((message: ChangeMessage | 'resync') => {
    // Subscribed again: what was published meanwhile is unknown, so start empty (and store again).
    if (message === 'resync') return cache.setRedisAway(false);
    if (message.kind !== 'response-cache' || message.id === undefined) return;
    const heard = decode(message.id);
    if (heard && heard.replica !== replica) cache.invalidate(heard.scope, 'replica');
  });
  const away = (): void => {
    if (cache.storing) cache.setRedisAway(true);
  };
  subscriber.on('close', away);
  subscriber.on('end', away);
  if (subscriber.status !== 'ready') away();
  return () => {
    unWrite();
    unListen();
    subscriber.off('close', away);
    subscriber.off('end', away);
  };
}

const STRONG_TIMEOUT_MS = 1000;

/** The counters that can drop a read of `scope`, as Redis keys (the same partition as cache-scope.ts's Generations). */
function readKeys(keys: RedisKeys, scope: CacheScope): string[] {
  const all = keys.cacheGeneration('all');
  if (scope.level === 'all') return [all];
  const db = slotOf(scope.db);
  if (scope.level === 'db') return [all, keys.cacheGeneration(`db:${db}`), keys.cacheGeneration(`dbr:${db}`)];
  const collection = slotOf(`${scope.db}/${scope.collection}`);
  const own = scope.document === undefined ? keys.cacheGeneration(`q:${collection}`) : keys.cacheGeneration(`d:${documentSlot(scope)}`);
  return [all, keys.cacheGeneration(`db:${db}`), keys.cacheGeneration(`c:${collection}`), own];
}

function bumpKeys(keys: RedisKeys, scope: CacheScope): string[] {
  if (scope.level === 'all') return [keys.cacheGeneration('all')];
  const db = slotOf(scope.db);
  if (scope.level === 'db') return [keys.cacheGeneration(`db:${db}`)];
  const collection = slotOf(`${scope.db}/${scope.collection}`);
  if (scope.document === undefined) return [keys.cacheGeneration(`c:${collection}`), keys.cacheGeneration(`dbr:${db}`)];
  return [keys.cacheGeneration(`d:${documentSlot(scope)}`), keys.cacheGeneration(`q:${collection}`), keys.cacheGeneration(`dbr:${db}`)];
}

/**
 * `cache.consistency: strong`: the generations in Redis. A read is one MGET (the keys share the
 * service's hash tag, so one slot on a Cluster); a write one pipelined INCR per counter. Both
 * reject after a second, and a caller that gets a rejection forwards without storing.
 */
export class StrongGenerations {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  read(scope: CacheScope): Promise<string> {
    return bounded(this.redis.mget(...readKeys(this.keys, scope)).then((values) => values.map((v) => v ?? '0').join(',')));
  }

  bump(scope: CacheScope): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const key of bumpKeys(this.keys, scope)) pipeline.incr(key);
    return bounded(
      pipeline.exec().then((results) => {
        const failed = results?.find(([error]) => error);
        if (failed) throw failed[0];
      }),
    );
  }
}

function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('Redis did not answer the cache generation in time')), STRONG_TIMEOUT_MS);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
