/**
 * Where automatic persisted queries live (SPEC §15): per app in Redis, so a query registered
 * through one replica runs by its hash on every other, with an in-process LRU in front so a
 * known hash costs no round trip. A hash names its text (sha256), so a cached entry can never be
 * stale: another replica evicting it from Redis only means a replica that never saw it answers
 * PersistedQueryNotFound and the client registers it again.
 *
 * Bounds per app (count and bytes) are kept by one script (store/scripts/persisted-queries/register-persisted-query.ts)
 * that evicts the oldest registrations: a flood of distinct queries costs the app's real clients at
 * most one more round trip each, where refusing past the bound would lock them out for good.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../../store/keys.js';
import { registerPersistedQuery } from '../../store/scripts/persisted-queries/register-persisted-query.js';
import { LruCache } from '../../util/lru.js';

export interface PersistedQueryBounds {
  /** Queries one app keeps in Redis; past it the oldest registration goes. */
  readonly maxQueries: number;
  /** Bytes of query text one app keeps in Redis (UTF-8); past it the oldest registrations go. */
  readonly maxBytes: number;
  /** An app's queries expire this long after its last registration (an app deleted leaves nothing forever). */
  readonly ttlMs: number;
  /** Entries and bytes of the in-process LRU, shared by every app of the replica. */
  readonly localEntries: number;
  readonly localBytes: number;
}

export const PERSISTED_QUERY_BOUNDS: PersistedQueryBounds = {
  maxQueries: 2000,
  maxBytes: 8 * 1024 * 1024,
  ttlMs: 30 * 24 * 3600 * 1000,
  localEntries: 2000,
  localBytes: 16 * 1024 * 1024,
};

export interface Registration {
  readonly stored: boolean;
  /** Older registrations the bound removed to make room. */
  readonly evicted: number;
}

export class PersistedQueryStore {
  private readonly local: LruCache<string, string>;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Pick<RedisKeys, 'persistedQueryTexts' | 'persistedQueryOrder' | 'persistedQueryMeta'>,
    private readonly bounds: PersistedQueryBounds = PERSISTED_QUERY_BOUNDS,
  ) {
    this.local = new LruCache(bounds.localEntries, bounds.localBytes);
  }

  /** The text of `hash` (64 lower-case hex) for the app, or undefined when no replica registered it (or it was evicted). */
  async get(appId: string, hash: string): Promise<string | undefined> {
    const key = `${appId}\n${hash}`;
    const hit = this.local.get(key);
    if (hit !== undefined) return hit;
    const text = await this.redis.hget(this.keys.persistedQueryTexts(appId), hash);
    if (text === null) return undefined;
    this.local.set(key, text, weightOf(text));
    return text;
  }

  /** Stores `text` under `hash` (its sha256, checked by the caller) for the app. */
  async register(appId: string, hash: string, text: string): Promise<Registration> {
    const keys = [this.keys.persistedQueryTexts(appId), this.keys.persistedQueryOrder(appId), this.keys.persistedQueryMeta(appId)];
    const [stored, evicted] = (await registerPersistedQuery.run(this.redis, keys, [hash, text, this.bounds.maxQueries, this.bounds.maxBytes, this.bounds.ttlMs])) as [number, number];
    if (stored === 1) this.local.set(`${appId}\n${hash}`, text, weightOf(text));
    return { stored: stored === 1, evicted };
  }
}

/** Heap bytes of a cached text: two per UTF-16 unit, plus the entry. */
const weightOf = (text: string): number => text.length * 2 + 160;
