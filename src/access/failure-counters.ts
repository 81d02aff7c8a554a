import type { Redis } from 'ioredis';
import { releaseFailureAttempt } from '../store/scripts/release-failure-attempt.js';
import { reserveFailureAttempt } from '../store/scripts/reserve-failure-attempt.js';

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

/** A counter an attempt reserves on: refused once `limit` attempts are counted in its window. */
export interface CounterLimit {
  key: string;
  limit: number;
  windowMs: number;
}

/** The outcome of a reservation: `locked` is the index of the counter at its limit, -1 when reserved. */
export interface Reservation {
  locked: number;
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

  /**
   * Counts one attempt on every counter before it is checked, all or none, so that concurrent
   * attempts cannot all read "under the limit" (SPEC §3.2, issue 34): one atomic script on
   * Redis; a counter this process already knows to be full refuses with no I/O; while Redis is
   * away the reservation is counted here (synchronously, so atomic within the process) and
   * handed to Redis later like any failure counted during an outage.
   */
  async reserve(counters: readonly CounterLimit[]): Promise<Reservation> {
    const entries = counters.map(({ key, windowMs }) => {
      let entry = this.live(key);
      if (!entry) {
        entry = { count: 0, pending: 0, expiresAt: 0, windowMs, flushing: null };
        this.remember(key, entry);
      }
      return entry;
    });
    const full = counters.findIndex(({ limit }, i) => entries[i]!.count >= limit);
    if (full >= 0) return { locked: full, remainingMs: Math.max(0, entries[full]!.expiresAt - this.now()) };
    // Counted here first, synchronously: the next reservation in this process sees it at once.
    for (const [i, entry] of entries.entries()) this.countOne(entry, counters[i]!.windowMs);
    const away = entries.some((entry) => entry.quietUntil !== undefined && this.now() < entry.quietUntil);
    if (!away) {
      // Writes already under way (a clear to send first, a flush) go before the reservation.
      for (const { key } of counters) if (this.unsentClears.has(key)) await this.sendClear(key);
      for (const entry of entries) if (entry.flushing) await entry.flushing;
    }
    if (away || counters.some(({ key }) => this.unsentClears.has(key))) return { locked: -1, remainingMs: 0 };
    // What Redis has not heard (this reservation and any failures counted during an outage) is
    // taken out of `pending` while it is sent, so a concurrent reservation does not send it again.
    const sent = entries.map((entry) => {
      const amount = entry.pending;
      entry.pending = 0;
      return amount;
    });
    const args = counters.flatMap(({ limit, windowMs }, i) => [limit, windowMs, sent[i]! - 1]);
    let answer: unknown;
    try {
      answer = await reserveFailureAttempt.run(
        this.redis,
        counters.map(({ key }) => key),
        args,
      );
    } catch {
      // Redis away: the reservation stays counted here, pending, and goes with a later write.
      for (const [i, entry] of entries.entries()) {
        entry.pending += sent[i]!;
        entry.quietUntil = this.now() + RETRY_AFTER_FAILED_WRITE_MS;
      }
      return { locked: -1, remainingMs: 0 };
    }
    const [index, pttl] = (answer as Array<number | string>).map(Number);
    if (!index) return { locked: -1, remainingMs: 0 };
    // Refused by the shared count, which wrote nothing: this attempt is given back here.
    for (const [i, entry] of entries.entries()) {
      entry.pending += sent[i]! - 1;
      entry.count--;
    }
    const locked = index - 1;
    const ttl = pttl! > 0 ? pttl! : counters[locked]!.windowMs;
    const entry = entries[locked]!;
    entry.count = Math.max(entry.count, counters[locked]!.limit);
    entry.expiresAt = Math.max(entry.expiresAt, this.now() + ttl);
    return { locked, remainingMs: ttl };
  }

  /** Gives back one reserved attempt on `key` (the password was right); never below zero. */
  async release(key: string): Promise<void> {
    const entry = this.live(key);
    if (entry && entry.count > 0) {
      entry.count--;
      if (entry.pending > 0) {
        // Redis never heard of it: nothing to give back there.
        entry.pending--;
        return;
      }
    }
    try {
      await releaseFailureAttempt.run(this.redis, [key], []);
    } catch {
      // Redis away: the attempt stays counted there, which errs on the side of the limit.
    }
  }

  private countOne(entry: Entry, windowMs: number): void {
    entry.count++;
    entry.pending++;
    entry.windowMs = windowMs;
    entry.expiresAt = this.now() + windowMs;
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
