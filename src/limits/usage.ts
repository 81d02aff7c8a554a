/**
 * Per key and UTC day: requests admitted, units, requests refused (SPEC §10, "Usage"). Counted
 * in process (one Map lookup per request) and written every few seconds in one pipeline, so a
 * request pays no Redis round trip. A crash loses what was counted since the last write (at
 * most FLUSH_EVERY_MS of traffic); a write Redis refuses is kept and retried, up to a bound.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';
import { utcDay } from '../store/keys.js';

export const FLUSH_EVERY_MS = 5000;
/** Usage kept at least 90 days (SPEC §10): each day's hash lives this long after its last write. */
const KEPT_SECONDS = 100 * 86_400;
/** Keys whose counts wait for Redis at most; past it the oldest counts are dropped (and said so in docs). */
const MAX_PENDING_KEYS = 100_000;
/** How long a written batch is kept for reads sent before it was (a read answers in far less). */
const SENT_KEPT_MS = 60_000;

interface Cell {
  requests: number;
  units: number;
  refused: number;
}

export interface UsageDay {
  day: string;
  requests: number;
  units: number;
  refused: number;
}

type Batch = { day: string; cells: Map<string, Cell> };

export class UsageCounter {
  private cells = new Map<string, Cell>();
  private day: string;
  private dayEnds: number;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly onWriteFailed: (error: Error) => void = () => {},
  ) {
    this.day = utcDay();
    this.dayEnds = nextUtcMidnight(Date.now());
  }

  /** One request made with `keyId`: admitted (units > 0) or refused; `requests` may be -1 to correct an admission. */
  record(keyId: string, requests: number, units: number, refused: number, now: number): void {
    if (now >= this.dayEnds) this.rollDay(now);
    let cell = this.cells.get(keyId);
    if (cell === undefined) {
      cell = { requests: 0, units: 0, refused: 0 };
      this.cells.set(keyId, cell);
    }
    cell.requests += requests;
    cell.units += units;
    cell.refused += refused;
  }

  /**
   * `days` of `keyId` as Redis has them plus what this replica counted and Redis did not have
   * when it answered: the counts not written yet, and those of a flush sent after the read.
   * The read and the flushes share one connection, so Redis answers them in the order sent: a
   * flush sent before the read is in its answer, one sent after is not, however the answers'
   * promises settle. Without the second part a flush starting while the read was on its way
   * took its counts out of the pending ones before the answer came back, and they were missing.
   */
  async read(keyId: string, days: string[]): Promise<UsageDay[]> {
    const sentBefore = this.flushesSent;
    const rows = await readUsage(this.redis, this.keys, keyId, days);
    const add = (day: string, cell: Cell | undefined) => {
      const row = cell && rows.find((d) => d.day === day);
      if (!row || !cell) return;
      row.requests += cell.requests;
      row.units += cell.units;
      row.refused += cell.refused;
    };
    for (const flush of this.sent) {
      if (flush.seq > sentBefore) for (const batch of flush.batches) add(batch.day, batch.cells.get(keyId));
    }
    for (const pending of this.pendingDays) add(pending.day, pending.cells.get(keyId));
    add(this.day, this.cells.get(keyId));
    return rows;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Writes what was counted (one pipeline: HINCRBY × 3 and EXPIRE per key and day). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => (this.flushing = null));
    return this.flushing;
  }

  private pendingDays: Batch[] = [];
  /** Flushes sent, numbered in the order their pipelines went out. */
  private flushesSent = 0;
  /** Recent flushes that Redis took or may still be taking (one that fails goes back to pendingDays). */
  private sent: Array<{ seq: number; at: number; batches: Batch[] }> = [];

  private rollDay(now: number): void {
    if (this.cells.size > 0) this.pendingDays.push({ day: this.day, cells: this.cells });
    this.cells = new Map();
    this.day = utcDay(now);
    this.dayEnds = nextUtcMidnight(now);
  }

  private async write(): Promise<void> {
    const batches = this.pendingDays.splice(0);
    if (this.cells.size > 0) {
      batches.push({ day: this.day, cells: this.cells });
      this.cells = new Map();
    }
    if (batches.length === 0) return;
    const now = Date.now();
    this.sent = this.sent.filter((flush) => now - flush.at < SENT_KEPT_MS);
    const flush = { seq: ++this.flushesSent, at: now, batches };
    this.sent.push(flush);
    const pipeline = this.redis.pipeline();
    for (const { day, cells } of batches) {
      for (const [keyId, c] of cells) {
        const key = this.keys.keyUsage(keyId, day);
        if (c.requests) pipeline.hincrby(key, 'requests', c.requests);
        if (c.units) pipeline.hincrby(key, 'units', c.units);
        if (c.refused) pipeline.hincrby(key, 'refused', c.refused);
        pipeline.expire(key, KEPT_SECONDS);
      }
    }
    try {
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error);
      if (failed) throw failed[0];
    } catch (error) {
      this.sent = this.sent.filter((f) => f !== flush);
      // Kept for the next write (HINCRBY is not idempotent: a pipeline half applied counts twice; rare, and said so in docs).
      let kept = 0;
      for (const b of batches) kept += b.cells.size;
      if (kept <= MAX_PENDING_KEYS) this.pendingDays.unshift(...batches);
      this.onWriteFailed(error as Error);
    }
  }
}

/** Days from `from` to `to` (YYYY-MM-DD, inclusive) of one key, oldest first; days without use are zeros. */
export async function readUsage(redis: Redis, keys: RedisKeys, keyId: string, days: string[]): Promise<UsageDay[]> {
  const pipeline = redis.pipeline();
  for (const day of days) pipeline.hgetall(keys.keyUsage(keyId, day));
  const results = (await pipeline.exec()) ?? [];
  return days.map((day, i) => {
    const [error, value] = results[i] ?? [null, {}];
    if (error) throw error;
    const h = (value ?? {}) as Record<string, string>;
    return { day, requests: Number(h.requests ?? 0), units: Number(h.units ?? 0), refused: Number(h.refused ?? 0) };
  });
}

function nextUtcMidnight(now: number): number {
  return (Math.floor(now / 86_400_000) + 1) * 86_400_000;
}
