/**
 * The worker's writes, committed in groups (issue 14): every delivery, skipped entry and
 * acknowledgement hands its writes to one queue, and everything queued while the previous commit
 * was in flight (or in the same turn of the event loop) goes to Redis as one MULTI. Writes of the
 * same kind are merged: one ZADD per log index with all the batch's ids, one XACK and one XDEL
 * with all the batch's entry ids, one ZADD / ZREM of retry jobs. So 64 deliveries cost a few
 * commands each (the log entry, its marker) instead of eleven, and one round trip instead of 128.
 *
 * A part's promise settles once the MULTI holding it committed. Every command is idempotent, so a
 * failed MULTI is sent again whole (with backoff, while Redis is unreachable) until a part has
 * waited `giveUpMs`; that part is rejected and its entry stays pending for a reclaim.
 */
import type { ChainableCommander, Redis } from 'ioredis';
import type { RedisKeys } from '../../store/keys.js';
import { backoffMs } from '../../util/backoff.js';
import type { WebhookLogEntry } from '../log-entry.js';
import { serializeLogEntryBytes } from '../logs/stored-log-entry.js';
import type { WebhookLogStore } from '../logs/log-store.js';
import { UnprocessableEvent } from './unprocessable.js';

export class WorkerKilled extends Error {
  constructor() {
    super('the worker was killed');
  }
}

/**
 * Where a delivery's marker goes: its own `deliveryDone` key, or (`field` set) a field of its
 * stream entry's `entryDeliveries` hash.
 */
export interface MarkerAt {
  key: string;
  field?: string;
}

/** One delivery's (or entry's) writes. */
export interface CommitPart {
  logs?: WebhookLogEntry[];
  /**
   * Markers: key, value and, for a field of an entry's hash, the field (TTL: `markerTtlMs`).
   * The fields of one hash in one commit are one HSET and one PEXPIRE.
   */
  markers?: Array<[key: string, value: string, field?: string]>;
  retryAdd?: Array<[dueAt: number, member: string]>;
  retryRemove?: string[];
  /** Stream entries to acknowledge (XACK + XDEL). */
  acks?: string[];
  /** Entry marker hashes to delete (with `acks`: their entries are done). */
  dropMarkers?: string[];
  /** A final outcome for the consecutive-failure count of one webhook version. */
  outcome?: { webhookId: string; counterKey: string; failed: boolean };
}

interface Pending {
  part: CommitPart;
  /** The part's log entries as stored (UTF-8 JSON), serialized when the part was handed over. */
  texts: Buffer[] | undefined;
  since: number;
  resolve(): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions {
  redis: Redis;
  keys: RedisKeys;
  logs: WebhookLogStore;
  markerTtlMs: number;
  /** How long a failure count lives without a new failed event. */
  failureCountTtlMs: number;
  giveUpMs: number;
  killed(): boolean;
  stopping(): boolean;
  /** After a commit: a webhook version's consecutive failures went from `before` to `after`. */
  onFailureCount(webhookId: string, before: number, after: number): void;
}

const MAX_PARTS = 1024;
/**
 * Once the worker is stopping, how long a commit keeps retrying an unreachable Redis. Its entries
 * stay pending and another worker reclaims them, so the stop ends well inside Kubernetes' 30 s
 * grace period instead of being SIGKILLed there.
 */
const STOPPING_GIVE_UP_MS = 5_000;

export class GroupCommit {
  private queue: Pending[] = [];
  private running = false;
  private failures = 0;
  private stoppingSince = 0;

  constructor(private readonly o: GroupCommitOptions) {}

  /**
   * Rejects at once with UnprocessableEvent when a log entry does not serialize (a poison
   * event): one bad part must not fail the batch it would have joined, nor be retried.
   */
  commit(part: CommitPart): Promise<void> {
    if (this.o.killed()) return Promise.reject(new WorkerKilled());
    let texts: Buffer[] | undefined;
    try {
      texts = part.logs?.map(serializeLogEntryBytes);
    } catch (error) {
      return Promise.reject(new UnprocessableEvent(error));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ part, texts, since: Date.now(), resolve, reject });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      // Whatever is queued in this turn of the event loop joins the first batch.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_PARTS);
        if (this.o.killed()) {
          for (const p of [...batch, ...this.queue.splice(0)]) p.reject(new WorkerKilled());
          return;
        }
        try {
          await this.write(batch);
          this.failures = 0;
          for (const p of batch) p.resolve();
        } catch (error) {
          this.failures++;
          const now = Date.now();
          if (this.o.stopping()) this.stoppingSince ||= now;
          const stopGiveUp = this.stoppingSince > 0 && now - this.stoppingSince > STOPPING_GIVE_UP_MS;
          const again: Pending[] = [];
          for (const p of batch) {
            if (now - p.since > this.o.giveUpMs || stopGiveUp) p.reject(error);
            else again.push(p);
          }
          this.queue.unshift(...again);
          if (this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, backoffMs(this.failures, 50, 2000)).unref());
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async write(batch: Pending[]): Promise<void> {
    const { redis, keys, logs, markerTtlMs } = this.o;
    const multi: ChainableCommander = redis.multi();
    const entries: WebhookLogEntry[] = [];
    const texts: Buffer[] = [];
    const retryAdd: Array<number | string> = [];
    const retryRemove: string[] = [];
    const acks: string[] = [];
    const dropMarkers: string[] = [];
    /** Per entry hash: its markers' fields and values. */
    let fields: Map<string, string[]> | undefined;
    /** Per failure counter, in order: whether a success reset it, and the failures after the last reset. */
    const counters = new Map<string, { webhookId: string; reset: boolean; failed: number }>();
    for (const { part, texts: partTexts } of batch) {
      if (part.logs) for (const e of part.logs) entries.push(e);
      if (partTexts) for (const t of partTexts) texts.push(t);
      if (part.markers) {
        for (const [key, value, field] of part.markers) {
          if (field === undefined) {
            multi.set(key, value, 'PX', markerTtlMs);
            continue;
          }
          fields ??= new Map();
          const list = fields.get(key);
          if (list) list.push(field, value);
          else fields.set(key, [field, value]);
        }
      }
      if (part.dropMarkers) for (const key of part.dropMarkers) dropMarkers.push(key);
      if (part.retryAdd) for (const [at, member] of part.retryAdd) retryAdd.push(at, member);
      if (part.retryRemove) for (const member of part.retryRemove) retryRemove.push(member);
      if (part.acks) for (const id of part.acks) acks.push(id);
      if (part.outcome) {
        const { counterKey, webhookId, failed } = part.outcome;
        let c = counters.get(counterKey);
        if (!c) counters.set(counterKey, (c = { webhookId, reset: false, failed: 0 }));
        if (failed) c.failed++;
        else {
          c.reset = true;
          c.failed = 0;
        }
      }
    }
    if (fields) {
      for (const [key, list] of fields) {
        multi.hset(key, ...list);
        multi.pexpire(key, markerTtlMs);
      }
    }
    if (entries.length > 0) logs.addMany(multi, entries, Date.now(), texts);
    if (retryRemove.length > 0) multi.zrem(keys.retrySchedule, ...retryRemove);
    if (retryAdd.length > 0) multi.zadd(keys.retrySchedule, ...retryAdd);
    const counted: Array<{ webhookId: string; index: number; added: number; reset: boolean }> = [];
    for (const [key, c] of counters) {
      if (c.reset && c.failed === 0) multi.del(key);
      else if (c.reset) {
        multi.set(key, c.failed, 'PX', this.o.failureCountTtlMs);
        counted.push({ webhookId: c.webhookId, index: -1, added: c.failed, reset: true });
      } else {
        // A MULTI's first queued command is MULTI itself, which has no result.
        counted.push({ webhookId: c.webhookId, index: multi.length - 1, added: c.failed, reset: false });
        multi.incrby(key, c.failed);
        multi.pexpire(key, this.o.failureCountTtlMs);
      }
    }
    if (acks.length > 0) {
      multi.xack(keys.events, keys.eventsGroup, ...acks);
      multi.xdel(keys.events, ...acks);
    }
    // After the HSETs above: a hash whose entry this commit acknowledges is not left behind.
    if (dropMarkers.length > 0) multi.del(...dropMarkers);
    const results = await multi.exec();
    if (!results) throw new Error('the transaction was discarded');
    const failed = results.find(([error]) => error);
    if (failed) throw failed[0] as Error;
    for (const c of counted) {
      const after = c.reset ? c.added : Number(results[c.index]?.[1]);
      this.o.onFailureCount(c.webhookId, c.reset ? 0 : after - c.added, after);
    }
  }
}
