import type { Redis } from 'ioredis';

interface Entry {
  /** The total as this process knows it: what Redis last reported plus what Redis has not heard yet. */
  count: number;
  /** Failures counted here that Redis has not been told (it was away, or a write is in flight). */
  pending: number;
  expiresAt: number;
  windowMs: number;
  flushing: Promise<void> | null;
  /** After a failed write, no new attempt before this time (Redis is away). */
  quietUntil?: number;
}

const RETRY_AFTER_FAILED_WRITE_MS = 1000;

export interface FailureCount {
  count: number;
  remainingMs: number;
}

/**
 * Failure counters (sign-in guards) shared by every replica through Redis, each a key whose
 * window restarts with every failure. Every process keeps its own copy of the counters it has
 * touched, so that while Redis is away it still counts and still holds a lock it knew of; what
 * it counted meanwhile is added to Redis when Redis answers again (and re-added if Redis came
 * back empty), so a lock earned during an outage survives it.
 */
export class FailureCounters {
  private readonly local = new Map<string, Entry>();
  /** Counters a success cleared while Redis was away: deleted there once it answers again. */
  private readonly unsentClears = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly maxEntries = 100_000,
    private readonly now: () => number = Date.now,
  ) {
    // Redis is back: hand over at once what was counted while it was away, rather than waiting
    // for the next failure or check of each counter to do it.
    redis.on('ready', () => this.flushAllPending());
  }

  private flushAllPending(): void {
    for (const key of this.unsentClears) void this.sendClear(key);
    for (const [key, entry] of this.local) {
      if (entry.pending <= 0 || entry.expiresAt <= this.now()) continue;
      entry.quietUntil = undefined;
      void this.flush(key, entry);
    }
  }

  /** This process's view, without waiting for I/O (what Redis has not heard yet is sent in the background). */
  peek(key: string): FailureCount {
    const entry = this.live(key);
    if (!entry) return { count: 0, remainingMs: 0 };
    if (entry.pending > 0) void this.flush(key, entry);
    return { count: entry.count, remainingMs: entry.expiresAt - this.now() };
  }

  /** Whether this process knows of failures on `key` (no I/O). */
  knows(key: string): boolean {
    return (this.live(key)?.count ?? 0) > 0;
  }

  /** The shared counts (one round trip); this process's view of them when Redis does not answer. */
  async read(keys: string[]): Promise<FailureCount[]> {
    let results: Array<[Error | null, unknown]>;
    try {
      const pipeline = this.redis.pipeline();
      for (const key of keys) pipeline.get(key).pttl(key);
      results = (await pipeline.exec()) ?? [];
      for (const [error] of results) if (error) throw error;
    } catch {
      return keys.map((key) => this.peek(key));
    }
    return keys.map((key, i) => {
      const shared = Number(results[2 * i]?.[1] ?? 0);
      const ttl = Number(results[2 * i + 1]?.[1] ?? -2);
      const entry = this.live(key);
      if (!entry) {
        // Remembered so that a lock another replica set still holds here if Redis goes away.
        if (shared > 0 && ttl > 0) this.remember(key, { count: shared, pending: 0, expiresAt: this.now() + ttl, windowMs: ttl, flushing: null });
        return { count: shared, remainingMs: Math.max(ttl, 0) };
      }
      const known = shared + entry.pending;
      // Redis lost counts it had been told (restarted empty): tell it again.
      if (entry.count > known) entry.pending += entry.count - known;
      entry.count = Math.max(entry.count, known);
      if (entry.pending > 0) void this.flush(key, entry);
      return { count: entry.count, remainingMs: Math.max(entry.expiresAt - this.now(), ttl) };
    });
  }

  /** One more failure on `key`, whose window restarts; answers the total as now known. */
  async add(key: string, windowMs: number): Promise<number> {
    let entry = this.live(key);
    if (!entry) {
      entry = { count: 0, pending: 0, expiresAt: 0, windowMs, flushing: null };
      this.remember(key, entry);
    }
    entry.count++;
    entry.pending++;
    entry.windowMs = windowMs;
    entry.expiresAt = this.now() + windowMs;
    await this.flush(key, entry);
    return entry.count;
  }

  /**
   * A success: the counter starts again from zero. While Redis is away the clear waits here and
   * is sent when Redis answers again, so failures counted before the outage do not lock out
   * someone who signed in during it. Failures counted after the clear are written after it.
   */
  async clear(key: string): Promise<void> {
    this.local.delete(key);
    await this.sendClear(key);
  }

  private async sendClear(key: string): Promise<void> {
    this.unsentClears.add(key);
    try {
      await this.redis.del(key);
      this.unsentClears.delete(key);
    } catch {
      // Redis away: sent again on 'ready'.
    }
  }

  /**
   * Tells Redis what it has not heard, one write at a time per key (failures that arrive during
   * a write go with the next one), so a flood costs one round trip per write, not per failure.
   */
  private flush(key: string, entry: Entry): Promise<void> {
    if (entry.flushing) return entry.flushing;
    if (entry.quietUntil !== undefined && this.now() < entry.quietUntil) return Promise.resolve();
    // A clear not yet sent goes first, or it would also erase the failures counted after it.
    if (this.unsentClears.has(key)) return this.sendClear(key).then(() => (this.unsentClears.has(key) ? undefined : this.flush(key, entry)));
    const amount = entry.pending;
    let ok = false;
    entry.flushing = this.redis
      .pipeline()
      .incrby(key, amount)
      .pexpire(key, entry.windowMs)
      .exec()
      .then((results) => {
        const [error, total] = results?.[0] ?? [new Error('Connection is closed.'), 0];
        if (error) throw error;
        entry.pending -= amount;
        entry.count = Math.max(entry.count, Number(total) + entry.pending);
        entry.quietUntil = undefined;
        ok = true;
      })
      .catch(() => {
        // Redis away: the failures stay pending here and go with a later write or read.
        entry.quietUntil = this.now() + RETRY_AFTER_FAILED_WRITE_MS;
      })
      .finally(() => {
        entry.flushing = null;
        if (ok && entry.pending > 0) void this.flush(key, entry);
      });
    return entry.flushing;
  }

  private remember(key: string, entry: Entry): void {
    if (this.local.size >= this.maxEntries) this.local.delete(this.local.keys().next().value!);
    this.local.set(key, entry);
  }

  private live(key: string): Entry | undefined {
    const entry = this.local.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.local.delete(key);
      return undefined;
    }
    return entry;
  }
}
