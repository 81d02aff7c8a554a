import type { Principal } from '../principal/principal.js';
import type { KeyRecord } from './key-record.js';

export interface VerificationCacheOptions {
  /** A cached key used after this age is re-read from Redis in the background (the request does not wait). */
  refreshAfterMs: number;
  /** A cached key older than this is never trusted: the request waits for Redis, or gets 503 without it. */
  hardBoundMs: number;
  /** How long an unknown hash is remembered as unknown. */
  negativeMs: number;
  /** A background refresh that failed (Redis down) is not retried sooner than this. */
  retryMs: number;
  maxEntries: number;
  maxNegativeEntries: number;
  now(): number;
}

export const DEFAULT_CACHE_OPTIONS: VerificationCacheOptions = {
  refreshAfterMs: 5_000,
  hardBoundMs: 15_000,
  negativeMs: 2_000,
  retryMs: 1_000,
  maxEntries: 100_000,
  maxNegativeEntries: 10_000,
  now: Date.now,
};

/** The outcome of one verification: a value, never an exception (a bad key is an expected input). */
export type Verification =
  { ok: true; record: KeyRecord; principal: Principal } | { ok: false; reason: 'unknown' } | { ok: false; reason: 'expired'; expiredAt: number } | { ok: false; reason: 'unavailable' };

/**
 * How a verification was answered, for metrics. 'unconfirmed-hit': after a resync the key had to
 * be re-read, Redis could not answer, and the entry (within its hard bound) answered instead.
 */
export type CacheResult = 'hit' | 'miss' | 'negative-hit' | 'unavailable' | 'unconfirmed-hit';

interface Entry {
  record: KeyRecord;
  principal: Principal;
  /** When Redis last confirmed this record (the start of the read that returned it). */
  confirmedAt: number;
  /** No background refresh before this time (set after a failed one). */
  quietUntil: number;
  /**
   * Change messages may have been missed (a resync): the next use re-reads the key and waits for
   * the answer, so a key revoked meanwhile is refused at once. Only if Redis cannot answer does
   * the entry still serve, within its hard bound, as it would have without the resync.
   */
  unconfirmed: boolean;
}

/**
 * SPEC §5.4 / notes §D.2: hash → key record, in process, so a known key costs no Redis round
 * trip. Staleness is bounded three ways:
 *  - a change message for a key id (revocation on any replica) evicts it at once;
 *  - `flush()` on every (re)subscription of the change bus, since messages sent while the
 *    subscriber was away are lost: each entry must be confirmed by Redis at its next use (the
 *    request waits for that read), and serves without it only while Redis cannot answer;
 *  - whatever the messages did, an entry is re-read once it is `refreshAfterMs` old (in the
 *    background, the request goes on) and is never used past `hardBoundMs` without Redis
 *    confirming it again. With Redis unreachable, a cached key keeps working until then, and
 *    an unknown one gets 'unavailable' (503).
 * Expiry is checked on every use against the cached `expiresAt`, so a key stops working the
 * moment it expires whatever the cache holds. Reads racing an eviction are not cached: every
 * eviction bumps a generation, and a read that started before it answers but stores nothing.
 */
export class KeyVerificationCache {
  private readonly entries = new Map<string, Entry>();
  private readonly hashOfId = new Map<string, string>();
  private readonly unknown = new Map<string, number>();
  private readonly loading = new Map<string, Promise<Verification>>();
  private readonly refreshing = new Set<string>();
  private generation = 0;
  private readonly o: VerificationCacheOptions;

  constructor(
    private readonly fetch: (keyHash: string) => Promise<KeyRecord | null>,
    private readonly serviceId: string,
    options: Partial<VerificationCacheOptions> = {},
    private readonly onResult: (result: CacheResult) => void = () => {},
  ) {
    this.o = { ...DEFAULT_CACHE_OPTIONS, ...options };
  }

  /** Synchronous for a cached key (the hot path awaits nothing); a promise when Redis must be asked. */
  verify(keyHash: string): Verification | Promise<Verification> {
    const now = this.o.now();
    const entry = this.entries.get(keyHash);
    if (entry) {
      const age = now - entry.confirmedAt;
      if (age < this.o.hardBoundMs) {
        if (entry.unconfirmed) {
          if (now >= entry.quietUntil) return this.load(keyHash);
          // Redis could not confirm it a moment ago: not asked again on every request.
          this.onResult('unconfirmed-hit');
          return this.judge(entry, now);
        }
        if (age >= this.o.refreshAfterMs && now >= entry.quietUntil) this.refreshInBackground(keyHash, entry);
        this.onResult('hit');
        return this.judge(entry, now);
      }
    }
    const unknownUntil = this.unknown.get(keyHash);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) {
        this.onResult('negative-hit');
        return { ok: false, reason: 'unknown' };
      }
      this.unknown.delete(keyHash);
    }
    return this.load(keyHash);
  }

  /** Whether a key that verified is held (however fresh): it was well-formed when it was stored. */
  has(keyHash: string): boolean {
    return this.entries.has(keyHash);
  }

  /** A key changed or was revoked (change-bus message): forget it now. */
  evictId(id: string): void {
    this.generation++;
    const keyHash = this.hashOfId.get(id);
    if (keyHash === undefined) return;
    this.entries.delete(keyHash);
    this.hashOfId.delete(id);
  }

  /**
   * Messages may have been lost (resubscription, feature change, an unnamed change): nothing held
   * is used again before Redis is asked. Entries are kept, unconfirmed, rather than dropped: the
   * resubscription after a failover often comes before the command connection is back, and a
   * dropped entry would turn every known key into a 503 for that moment.
   */
  flush(): void {
    this.generation++;
    for (const entry of this.entries.values()) entry.unconfirmed = true;
    this.unknown.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private judge(entry: Entry, now: number): Verification {
    if (entry.record.expiresAt <= now) return { ok: false, reason: 'expired', expiredAt: entry.record.expiresAt };
    return { ok: true, record: entry.record, principal: entry.principal };
  }

  private load(keyHash: string): Promise<Verification> {
    let pending = this.loading.get(keyHash);
    if (!pending) {
      pending = this.read(keyHash).finally(() => this.loading.delete(keyHash));
      this.loading.set(keyHash, pending);
    }
    return pending;
  }

  private async read(keyHash: string): Promise<Verification> {
    const startedAt = this.o.now();
    const generation = this.generation;
    let record: KeyRecord | null;
    try {
      record = await this.fetch(keyHash);
    } catch {
      const held = this.entries.get(keyHash);
      if (held && this.o.now() - held.confirmedAt < this.o.hardBoundMs) {
        held.quietUntil = this.o.now() + this.o.retryMs;
        this.onResult('unconfirmed-hit');
        return this.judge(held, this.o.now());
      }
      // Past its hard bound a cached entry is not trusted, so it goes too.
      this.forget(keyHash);
      this.onResult('unavailable');
      return { ok: false, reason: 'unavailable' };
    }
    this.onResult('miss');
    const cacheable = generation === this.generation;
    if (!record || record.serviceId !== this.serviceId) {
      this.forget(keyHash);
      if (cacheable) this.rememberUnknown(keyHash, startedAt);
      return { ok: false, reason: 'unknown' };
    }
    const entry = this.entryFor(record, startedAt);
    if (cacheable) this.store(keyHash, entry);
    return this.judge(entry, this.o.now());
  }

  private refreshInBackground(keyHash: string, entry: Entry): void {
    if (this.refreshing.has(keyHash)) return;
    this.refreshing.add(keyHash);
    const startedAt = this.o.now();
    const generation = this.generation;
    this.fetch(keyHash)
      .then((record) => {
        if (generation !== this.generation || this.entries.get(keyHash) !== entry) return;
        if (!record || record.serviceId !== this.serviceId) {
          this.forget(keyHash);
          this.rememberUnknown(keyHash, startedAt);
        } else {
          this.store(keyHash, this.entryFor(record, startedAt));
        }
      })
      .catch(() => {
        entry.quietUntil = this.o.now() + this.o.retryMs;
      })
      .finally(() => this.refreshing.delete(keyHash));
  }

  private entryFor(record: KeyRecord, confirmedAt: number): Entry {
    const principal: Principal = Object.freeze({
      id: record.owner,
      roles: Object.freeze([...record.roles]),
      via: 'apikey',
      keyId: record._id,
      verifiedLocally: true,
      // An admin's overrides (SPEC §10): a change publishes the key's id, which evicts this entry.
      keyLimits: record.limits,
      priority: record.priority,
    });
    return { record, principal, confirmedAt, quietUntil: 0, unconfirmed: false };
  }

  private store(keyHash: string, entry: Entry): void {
    if (!this.entries.has(keyHash) && this.entries.size >= this.o.maxEntries) {
      const oldest = this.entries.keys().next().value!;
      this.forget(oldest);
    }
    this.entries.set(keyHash, entry);
    this.hashOfId.set(entry.record._id, keyHash);
  }

  private forget(keyHash: string): void {
    const entry = this.entries.get(keyHash);
    if (!entry) return;
    this.entries.delete(keyHash);
    if (this.hashOfId.get(entry.record._id) === keyHash) this.hashOfId.delete(entry.record._id);
  }

  private rememberUnknown(keyHash: string, from: number): void {
    if (this.unknown.size >= this.o.maxNegativeEntries) this.unknown.delete(this.unknown.keys().next().value!);
    this.unknown.set(keyHash, from + this.o.negativeMs);
  }
}
