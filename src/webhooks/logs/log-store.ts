/**
 * Webhook logs in Redis (SPEC §7.3). Each entry is a JSON string with a TTL of the retention
 * (`webhooks.logRetentionDays`, or `logRetentionSeconds`), so it expires by itself. Per webhook,
 * a sorted set of entry ids scored by time serves "newest first" paging, and one more per
 * status serves `?status=`. Reads only look at ids within the retention, so trimming older ids
 * is housekeeping: each process does it, and renews the index's TTL, at most once per
 * `maintenanceIntervalMs` per index (a hundredth of the retention, at most a minute),
 * not on each of the thousands of writes a busy webhook makes in that time. The index's TTL is
 * the retention plus that interval, so it always outlives its newest entry. Clear Logs deletes
 * entries (all, or older than a date).
 */
import type { ChainableCommander, Redis } from 'ioredis';
import type { RedisKeys } from '../../store/keys.js';
import { LOG_STATUSES, type LogStatus, type WebhookLogEntry } from '../log-entry.js';
import { parseStoredLogEntry, serializeLogEntry } from './stored-log-entry.js';

const CLEAR_CHUNK = 500;
/** The deepest entry a page over several statuses may reach (page × pagesize): each status index is read down to it. */
export const MAX_MERGED_DEPTH = 10_000;

export class WebhookLogStore {
  readonly maintenanceIntervalMs: number;
  /** When this process last trimmed each index and renewed its TTL. */
  private readonly maintainedAt = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    readonly retentionMs: number,
  ) {
    this.maintenanceIntervalMs = Math.max(1, Math.min(60_000, Math.floor(retentionMs / 100)));
  }

  /** Adds the commands that store `entry` to a MULTI (so it commits with the delivery's other writes). */
  add(multi: ChainableCommander, entry: WebhookLogEntry, now = Date.now()): void {
    this.addMany(multi, [entry], now);
  }

  /** Several entries: one SET each, and one ZADD per index with all of their ids (`texts`: their JSON, when already built). */
  addMany(multi: ChainableCommander, entries: readonly WebhookLogEntry[], now = Date.now(), texts?: ReadonlyArray<string | Buffer>): void {
    const { keys, retentionMs } = this;
    const indexes = new Map<string, Array<number | string>>();
    const push = (key: string, ts: number, id: string) => {
      const members = indexes.get(key);
      if (members) members.push(ts, id);
      else indexes.set(key, [ts, id]);
    };
    entries.forEach((entry, i) => {
      const ts = entry.timestamp.$date;
      multi.set(keys.webhookLogEntry(entry._id), texts?.[i] ?? serializeLogEntry(entry), 'PX', retentionMs);
      push(keys.webhookLogIndex(entry.webhookId), ts, entry._id);
      push(keys.webhookLogStatusIndex(entry.webhookId, entry.status), ts, entry._id);
    });
    for (const [key, members] of indexes) {
      multi.zadd(key, ...members);
      if (this.maintenanceDue(key, now)) {
        multi.zremrangebyscore(key, '-inf', `(${now - retentionMs}`);
        multi.pexpire(key, retentionMs + this.maintenanceIntervalMs);
      }
    }
  }

  private maintenanceDue(key: string, now: number): boolean {
    const last = this.maintainedAt.get(key);
    if (last !== undefined && now - last < this.maintenanceIntervalMs) return false;
    // Bounded: forgetting an index only means maintaining it once more.
    if (this.maintainedAt.size >= 10_000) this.maintainedAt.clear();
    this.maintainedAt.set(key, now);
    return true;
  }

  async write(entries: WebhookLogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const multi = this.redis.multi();
    this.addMany(multi, entries);
    await multi.exec();
  }

  /**
   * A page of entries, newest first, and the total count (for X-Total-Count). `statuses`: all
   * entries when empty; with two, the pages of both status indexes up to this one are merged
   * (the console's default view, success and failed), so a page costs its depth, bounded by
   * MAX_MERGED_DEPTH (checked by the route).
   */
  async list(webhookId: string, options: { statuses?: readonly LogStatus[]; page: number; pagesize: number }): Promise<{ total: number; entries: WebhookLogEntry[] }> {
    const statuses = new Set(options.statuses ?? []);
    const indexes = statuses.size === 0 || statuses.size === LOG_STATUSES.length ? [this.keys.webhookLogIndex(webhookId)] : [...statuses].map((s) => this.keys.webhookLogStatusIndex(webhookId, s));
    const cutoff = String(Date.now() - this.retentionMs);
    const offset = (options.page - 1) * options.pagesize;
    const { total, ids } = indexes.length === 1 ? await this.page(indexes[0]!, cutoff, offset, options.pagesize) : await this.mergedPage(indexes, cutoff, offset, options.pagesize);
    if (ids.length === 0) return { total, entries: [] };
    const texts = await this.redis.mget(ids.map((id) => this.keys.webhookLogEntry(id)));
    const entries: WebhookLogEntry[] = [];
    for (const text of texts) {
      if (!text) continue; // expired between the two reads
      try {
        entries.push(parseStoredLogEntry(text));
      } catch {
        // a damaged entry is left out
      }
    }
    return { total, entries };
  }

  private async page(index: string, cutoff: string, offset: number, count: number): Promise<{ total: number; ids: string[] }> {
    const [[, total], [, ids]] = (await this.redis.multi().zcount(index, cutoff, '+inf').zrevrangebyscore(index, '+inf', cutoff, 'LIMIT', offset, count).exec()) as [
      [unknown, number],
      [unknown, string[]],
    ];
    return { total, ids };
  }

  /** Newest first over several indexes: each one's first offset + count ids with their times, merged. */
  private async mergedPage(indexes: string[], cutoff: string, offset: number, count: number): Promise<{ total: number; ids: string[] }> {
    const multi = this.redis.multi();
    for (const index of indexes) multi.zcount(index, cutoff, '+inf').zrevrangebyscore(index, '+inf', cutoff, 'WITHSCORES', 'LIMIT', 0, offset + count);
    const replies = ((await multi.exec()) ?? []).map(([, value]) => value);
    let total = 0;
    const scored: Array<{ id: string; at: number }> = [];
    for (let i = 0; i < replies.length; i += 2) {
      total += replies[i] as number;
      const flat = replies[i + 1] as string[];
      for (let j = 0; j < flat.length; j += 2) scored.push({ id: flat[j]!, at: Number(flat[j + 1]) });
    }
    scored.sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return { total, ids: scored.slice(offset, offset + count).map((e) => e.id) };
  }

  /** True when the webhook has at least one entry within the retention. */
  async any(webhookId: string): Promise<boolean> {
    return (await this.redis.zcount(this.keys.webhookLogIndex(webhookId), String(Date.now() - this.retentionMs), '+inf')) > 0;
  }

  /** Deletes the webhook's entries, all of them or those older than `before` (epoch ms). Returns how many. */
  async clear(webhookId: string, before?: number): Promise<number> {
    const index = this.keys.webhookLogIndex(webhookId);
    const statusIndexes = LOG_STATUSES.map((s) => this.keys.webhookLogStatusIndex(webhookId, s));
    const max = before === undefined ? '+inf' : `(${before}`;
    let deleted = 0;
    for (;;) {
      const ids = await this.redis.zrangebyscore(index, '-inf', max, 'LIMIT', 0, CLEAR_CHUNK);
      if (ids.length === 0) break;
      const multi = this.redis.multi();
      multi.del(...ids.map((id) => this.keys.webhookLogEntry(id)));
      for (const key of [index, ...statusIndexes]) multi.zrem(key, ...ids);
      await multi.exec();
      deleted += ids.length;
    }
    // Status indexes may hold ids whose main-index member was trimmed already.
    const multi = this.redis.multi();
    for (const key of statusIndexes) multi.zremrangebyscore(key, '-inf', max);
    await multi.exec();
    return deleted;
  }
}
