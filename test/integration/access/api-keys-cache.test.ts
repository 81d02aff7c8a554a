import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { ChangeBus } from '../../../src/store/change-bus.js';
import { redisKeys } from '../../../src/store/keys.js';
import { hashApiKey } from '../../../src/keys/key-format.js';
import { ApiKeyIssuer } from '../../../src/keys/issuer.js';
import { ApiKeyStore } from '../../../src/keys/key-store.js';
import { KeyVerificationCache, type CacheResult, type Verification } from '../../../src/keys/verification-cache.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { waitFor } from '../../support/wait.js';

/**
 * The verification cache against a real Redis, with an injected clock so the staleness bounds
 * are checked exactly (no sleeping, no timing goals): what a cached key costs, when a change
 * Redis holds but no message announced is noticed, what happens with Redis gone.
 */
describe('KeyVerificationCache over a real Redis', () => {
  let redis: TestRedis;
  let store: ApiKeyStore;
  let issuer: ApiKeyIssuer;
  let clock = 0;
  let results: CacheResult[] = [];
  const keys = redisKeys('outrigger', 'cache-test');

  beforeAll(async () => {
    redis = await startTestRedis();
    store = new ApiKeyStore(redis.client, keys);
    issuer = new ApiKeyIssuer(store, new ChangeBus(redis.client, redis.client, keys.changes), { prefix: 'rig', serviceId: 'cache-test' }, createLogger({ level: 'silent' }), () => clock);
  });
  afterAll(async () => {
    await redis?.close();
  });
  beforeEach(() => {
    clock = Date.now();
    results = [];
  });

  const newCache = (serviceId = 'cache-test') =>
    new KeyVerificationCache(trackedFetch, serviceId, { refreshAfterMs: 5_000, hardBoundMs: 15_000, negativeMs: 2_000, retryMs: 1_000, now: () => clock }, (r) => results.push(r));
  const issue = async (owner = 'alice', lifetimeDays = 30) => issuer.issue({ owner, name: 'k', roles: ['reader'], lifetimeDays, maxKeys: 1000, via: 'api' });
  const settle = async (v: Verification | Promise<Verification>) => v;
  /** Issues a key and verifies it once, so the cache holds it; returns its hash. */
  const cachedKey = async (cache: KeyVerificationCache) => {
    const { key } = await issue();
    const hash = hashApiKey(key);
    await settle(cache.verify(hash));
    return hash;
  };
  /** The caches' reads from Redis still under way: `drain` waits for them, not a guessed time (issue 54). */
  const reads = new Set<Promise<unknown>>();
  const trackedFetch = (hash: string) => {
    const read = store.findByHash(hash);
    reads.add(read);
    void read.catch(() => {}).finally(() => reads.delete(read));
    return read;
  };
  /**
   * Lets every read a cache started (a background refresh, a load) answer, and the cache handle
   * the answer: its handlers were attached when it started the read, before these.
   */
  const drain = async () => {
    await Promise.allSettled([...reads]);
    await new Promise((r) => setImmediate(r));
  };

  it('answers a known key from memory: synchronously, with no Redis command', async () => {
    const cache = newCache();
    const { record, key } = await issue();
    const hash = hashApiKey(key);
    const first = await settle(cache.verify(hash));
    expect(first).toMatchObject({ ok: true, principal: { id: 'alice', roles: ['reader'], via: 'apikey', keyId: record._id, verifiedLocally: true } });
    const before = await redis.commandsProcessed();
    for (let i = 0; i < 1000; i++) {
      const answer = cache.verify(hash);
      expect(answer).not.toBeInstanceOf(Promise);
      expect((answer as Verification).ok).toBe(true);
    }
    // The second INFO counts the first one: nothing else ran.
    expect((await redis.commandsProcessed()) - before).toBe(1);
    expect(results.filter((r) => r === 'hit')).toHaveLength(1000);
  });

  it('notices a revocation no message announced: refreshed in the background after 5 s, never used past 15 s', async () => {
    const cache = newCache();
    const { record, key } = await issue();
    const hash = hashApiKey(key);
    await settle(cache.verify(hash));
    await store.revoke(record._id); // straight in Redis, no bus message reaches this cache
    clock += 4_999;
    expect(cache.verify(hash)).toMatchObject({ ok: true });
    clock += 1; // 5 s: still answered from memory, but Redis is asked again meanwhile
    expect(cache.verify(hash)).toMatchObject({ ok: true });
    await drain();
    expect(await settle(cache.verify(hash))).toEqual({ ok: false, reason: 'unknown' });

    // A key never used between 5 s and 15 s is re-read before it is trusted again.
    const other = await issue();
    const otherHash = hashApiKey(other.key);
    await settle(cache.verify(otherHash));
    await store.revoke(other.record._id);
    clock += 15_000;
    const answer = cache.verify(otherHash);
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toEqual({ ok: false, reason: 'unknown' });
  });

  it('evicts a key at once on a change message; on resync it re-reads every key before using it again', async () => {
    const cache = newCache();
    const a = await issue();
    const b = await issue();
    await settle(cache.verify(hashApiKey(a.key)));
    await settle(cache.verify(hashApiKey(b.key)));
    expect(cache.size).toBe(2);
    cache.evictId(a.record._id);
    expect(cache.size).toBe(1);
    expect(cache.verify(hashApiKey(a.key))).toBeInstanceOf(Promise);
    await drain();
    // b is revoked while the change bus was away (no message): the resync makes the next use ask Redis.
    await store.revoke(b.record._id);
    cache.flush();
    const afterResync = cache.verify(hashApiKey(b.key));
    expect(afterResync).toBeInstanceOf(Promise);
    expect(await afterResync).toEqual({ ok: false, reason: 'unknown' });
    // a is confirmed by that read and answered from memory again.
    cache.flush();
    expect(await settle(cache.verify(hashApiKey(a.key)))).toMatchObject({ ok: true });
    expect(cache.verify(hashApiKey(a.key))).toMatchObject({ ok: true });
    expect(cache.size).toBe(1);
  });

  it('after a resync with Redis unreachable (a failover): a key held keeps working within its hard bound', async () => {
    const cache = newCache();
    const hash = await cachedKey(cache);
    await redis.stop();
    try {
      cache.flush(); // the subscriber came back before the command connection did
      expect(await settle(cache.verify(hash))).toMatchObject({ ok: true });
      expect(results.at(-1)).toBe('unconfirmed-hit');
      // Not asked again on every request while Redis is away, but again after retryMs.
      expect(cache.verify(hash)).toMatchObject({ ok: true });
      clock += 1_000;
      expect(cache.verify(hash)).toBeInstanceOf(Promise);
      clock += 14_000; // 15 s since Redis last confirmed it
      expect(await settle(cache.verify(hash))).toEqual({ ok: false, reason: 'unavailable' });
    } finally {
      await redis.restart();
    }
  });

  it('does not cache a read that raced an eviction', async () => {
    const cache = newCache();
    const { record, key } = await issue();
    const pending = cache.verify(hashApiKey(key));
    expect(pending).toBeInstanceOf(Promise);
    cache.evictId(record._id); // the revocation message arrives while the read is in flight
    expect(await pending).toMatchObject({ ok: true });
    expect(cache.size).toBe(0);
  });

  it('refuses a cached key the moment it expires, without asking Redis', async () => {
    const cache = newCache();
    // Issued a day minus 4 s ago with a one-day lifetime: it expires 4 s from now, before any refresh is due.
    clock = Date.now() - 86_400_000 + 4_000;
    const { record, key } = await issue('alice', 1);
    clock = Date.now();
    const hash = hashApiKey(key);
    await settle(cache.verify(hash));
    const before = await redis.commandsProcessed();
    clock = record.expiresAt - 1;
    expect(cache.verify(hash)).toMatchObject({ ok: true });
    clock = record.expiresAt;
    expect(cache.verify(hash)).toEqual({ ok: false, reason: 'expired', expiredAt: record.expiresAt });
    expect((await redis.commandsProcessed()) - before).toBe(1);
  });

  it('remembers an unknown key for 2 s only', async () => {
    const cache = newCache();
    const hash = hashApiKey('rig_never-issued');
    expect(await settle(cache.verify(hash))).toEqual({ ok: false, reason: 'unknown' });
    const before = await redis.commandsProcessed();
    clock += 1_999;
    expect(cache.verify(hash)).toEqual({ ok: false, reason: 'unknown' });
    expect((await redis.commandsProcessed()) - before).toBe(1);
    clock += 1;
    const again = cache.verify(hash);
    expect(again).toBeInstanceOf(Promise);
    await again;
    expect(results).toEqual(['miss', 'negative-hit', 'miss']);
  });

  it('refuses a key of another service stored under this one', async () => {
    const { key } = await issue();
    expect(await settle(newCache('another-service').verify(hashApiKey(key)))).toEqual({ ok: false, reason: 'unknown' });
  });

  it('with Redis stopped: a cached key works until its hard bound, then 503; an unknown key gets 503', async () => {
    const cache = newCache();
    const hash = await cachedKey(cache);
    await redis.stop();
    try {
      clock += 6_000; // a background refresh fails quietly
      expect(cache.verify(hash)).toMatchObject({ ok: true });
      await drain();
      clock += 8_999; // 14.999 s after Redis last confirmed it
      expect(cache.verify(hash)).toMatchObject({ ok: true });
      expect(await settle(cache.verify(hashApiKey('rig_unknown')))).toEqual({ ok: false, reason: 'unavailable' });
      clock += 1; // 15 s: no longer trusted without Redis
      expect(await settle(cache.verify(hash))).toEqual({ ok: false, reason: 'unavailable' });
    } finally {
      await redis.restart();
    }
    // Once Redis answers again (the client reconnects on its own schedule), the key is trusted again.
    const back = await waitFor(
      () => settle(cache.verify(hash)),
      (v) => v.ok,
      15_000,
      'the cached key to verify again after the Redis restart',
    );
    expect(back).toMatchObject({ ok: true });
  });
});
