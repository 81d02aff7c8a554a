/**
 * The change feed through Redis (SPEC §6.5, "every replica sees every change"): the replica that
 * proxied a write appends its changes to one stream per service (`keys.subscriptionFeed`, capped
 * by `subscriptions.retention`: `MAXLEN ~ changes`, and `MINID` for the minutes), and every replica
 * with subscribers reads the stream on a blocking connection of its own and hands the changes of
 * each read, in stream order, to its hub. Positions are the stream ids.
 *
 * Nothing is published for a collection nobody subscribes to: replicas claim the collections they
 * have subscribers for in a sorted set (`keys.subscribedCollections`, scored by when the claim
 * lapses) and announce each claim and each renewal (every few seconds) on the change bus, so the
 * writing replica's check is one lookup in a local Map of claims and when they lapse. A claim is
 * written and announced before the subscription is answered.
 *
 * A replica without subscribers of its own sends Redis nothing for subscriptions: the blocking
 * reader and the renewal timer run only while it has local subscribers (started by the first,
 * stopped when the last leaves); it learns other replicas' claims from the bus (and reads the
 * sorted set once at start and after the bus reconnects).
 */
import type { Redis } from 'ioredis';
import type { ChangeBus } from '../../store/change-bus.js';
import type { Change, FeedChange } from './change.js';
import { comparePositions, isPosition, positionTime } from './positions.js';

export interface FeedOptions {
  readonly redis: Redis;
  /** A connection of its own for XREAD BLOCK. */
  readonly blocking: Redis;
  readonly bus: ChangeBus;
  readonly feedKey: string;
  readonly claimsKey: string;
  readonly retention: { readonly changes: number; readonly minutes: number };
  readonly onError: (error: unknown, what: string) => void;
}

/** The changes one read of the stream returned, in stream order. */
export type FeedListener = (changes: FeedChange[]) => void;

const BLOCK_MS = 1000;
const READ_COUNT = 500;
const CLAIM_RENEW_MS = 5000;
const CLAIM_TTL_MS = 20_000;

/** What a resume finds: the missed changes, or why they cannot be given. */
export type Missed = { ok: true; changes: FeedChange[] } | { ok: false; code: 'INVALID_LAST_EVENT_ID' | 'LAST_EVENT_ID_AHEAD' | 'BEYOND_RETENTION'; message: string };

export class ChangeFeed {
  /** Every claim this replica knows of (its own and other replicas'), with when it lapses (ms). */
  private readonly claimed = new Map<string, number>();
  private readonly localCounts = new Map<string, number>();
  private queue: Change[] = [];
  private flushing: Promise<void> | null = null;
  private position = '0-0';
  private running = false;
  /** The blocking reader: wanted while local subscribers exist; `reading` while its loop is alive. */
  private wantReading = false;
  private reading = false;
  private readingStarted: Promise<void> = Promise.resolve();
  private renewTimer: NodeJS.Timeout | undefined;
  private unsubscribeBus: (() => void) | undefined;
  private listener: FeedListener | undefined;

  constructor(private readonly o: FeedOptions) {}

  /** The last position handed to the hub: a resume reads up to it, live changes come after it. */
  get current(): string {
    return this.position;
  }

  /** Does any replica subscribe to anything (claims not yet seen to lapse)? */
  get anyWanted(): boolean {
    return this.claimed.size > 0;
  }

  /** Is the blocking reader running (tests: a replica without subscribers does not read)? */
  get readerRunning(): boolean {
    return this.reading;
  }

  /** Does some replica subscribe to this collection? One Map lookup, on the write path. */
  wants(db: string, collection: string): boolean {
    if (this.claimed.size === 0) return false;
    const member = claimMember(db, collection);
    const until = this.claimed.get(member);
    if (until === undefined) return false;
    if (until >= Date.now() || this.localCounts.has(member)) return true;
    this.claimed.delete(member); // lapsed: its claimant stopped renewing it
    return false;
  }

  async start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    this.running = true;
    this.unsubscribeBus = this.o.bus.on((m) => {
      if (m === 'resync') void this.refreshClaims();
      // At once: the claimer answers its subscriber next. Renewals come the same way.
      else if (m.kind === 'subscribed-collections' && m.id) this.claimed.set(m.id, Date.now() + CLAIM_TTL_MS);
    });
    await this.refreshClaims();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wantReading = false;
    this.stopRenewing();
    this.unsubscribeBus?.();
    await this.flushing;
    if (this.localCounts.size > 0) {
      const members = [...this.localCounts.keys()];
      await this.o.redis.zrem(this.o.claimsKey, ...members).catch(() => {});
    }
  }

  /**
   * A local subscriber for the collection: the reader started (from the stream's last entry) if it
   * was not running, and the collection claimed and announced, before the subscription is answered.
   */
  async claim(db: string, collection: string): Promise<void> {
    const member = claimMember(db, collection);
    const count = this.localCounts.get(member) ?? 0;
    this.localCounts.set(member, count + 1);
    if (!this.renewTimer) {
      this.renewTimer = setInterval(() => void this.renew(), CLAIM_RENEW_MS);
      this.renewTimer.unref();
    }
    await this.startReading();
    if (count > 0 && this.claimed.has(member)) return;
    this.claimed.set(member, Date.now() + CLAIM_TTL_MS);
    await this.o.redis.zadd(this.o.claimsKey, Date.now() + CLAIM_TTL_MS, member);
    await this.o.bus.publish({ kind: 'subscribed-collections', id: member });
  }

  /**
   * The subscriber left. The claim lapses by itself when no local subscriber renews it; after the
   * last local subscriber the reader and the renewals stop.
   */
  release(db: string, collection: string): void {
    const member = claimMember(db, collection);
    const count = (this.localCounts.get(member) ?? 1) - 1;
    if (count <= 0) this.localCounts.delete(member);
    else this.localCounts.set(member, count);
    if (this.localCounts.size === 0) {
      this.wantReading = false;
      this.stopRenewing();
    }
  }

  private stopRenewing(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /** Starts the blocking reader at the stream's last entry, unless its loop is still alive (then it just goes on). */
  private startReading(): Promise<void> {
    this.wantReading = true;
    if (this.reading || !this.running) return this.readingStarted;
    this.reading = true;
    this.readingStarted = (async () => {
      try {
        const last = (await this.o.redis.xrevrange(this.o.feedKey, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
        const newest = last[0]?.[0];
        if (newest !== undefined && comparePositions(newest, this.position) > 0) this.position = newest;
      } catch (error) {
        this.reading = false;
        throw error;
      }
      void this.readLoop();
    })();
    return this.readingStarted;
  }

  /** Queues changes for the stream; written together on the next turn of the event loop. */
  publish(changes: readonly Change[]): void {
    if (changes.length === 0) return;
    this.queue.push(...changes);
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    try {
      if (batch.length === 1) {
        // The common case at a moderate rate: one command, not MULTI/XADD/EXEC.
        await this.o.redis.xadd(this.o.feedKey, 'MAXLEN', '~', this.o.retention.changes, '*', 'c', JSON.stringify(batch[0]));
        return;
      }
      const multi = this.o.redis.multi();
      batch.forEach((change, i) => {
        const text = JSON.stringify(change);
        if (i === batch.length - 1) multi.xadd(this.o.feedKey, 'MAXLEN', '~', this.o.retention.changes, '*', 'c', text);
        else multi.xadd(this.o.feedKey, '*', 'c', text);
      });
      await multi.exec();
    } catch (error) {
      this.o.onError(error, 'publishing subscription changes');
    } finally {
      this.flushing = null;
      if (this.queue.length > 0) this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
    }
  }

  /** Reads the stream while local subscribers exist; hands each read's changes over together (the hub batches its re-reads). */
  private async readLoop(): Promise<void> {
    while (this.running && this.wantReading) {
      try {
        const reply = (await this.o.blocking.xread('COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', this.o.feedKey, this.position)) as Array<[string, Array<[string, string[]]>]> | null;
        if (!reply) continue;
        const changes: FeedChange[] = [];
        for (const [, entries] of reply) {
          for (const [id, fields] of entries) {
            this.position = id;
            const change = decode(fields);
            if (change) changes.push({ position: id, change });
          }
        }
        if (changes.length > 0) this.listener?.(changes);
      } catch (error) {
        if (!this.running) break;
        this.o.onError(error, 'reading the subscription feed');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    this.reading = false; // in the same turn as the check above: a claim meanwhile starts a new loop
  }

  /** The changes after `since` up to the current position, or why not (garbage, from the future, trimmed away). */
  async missedSince(since: string): Promise<Missed> {
    if (!isPosition(since)) return { ok: false, code: 'INVALID_LAST_EVENT_ID', message: 'Last-Event-ID is not an event id this server gave; live changes follow' };
    const upTo = this.position;
    if (comparePositions(since, upTo) > 0) return { ok: false, code: 'LAST_EVENT_ID_AHEAD', message: 'Last-Event-ID is later than any change this server has; live changes follow' };
    if (comparePositions(since, upTo) === 0) return { ok: true, changes: [] };
    const cutoff = Date.now() - this.o.retention.minutes * 60_000;
    const first = (await this.o.redis.xrange(this.o.feedKey, '-', '+', 'COUNT', 1)) as Array<[string, string[]]>;
    const firstId = first[0]?.[0];
    // Retained means: not older than the minutes, and nothing after it was trimmed away (the first entry kept is at or before the next one).
    const trimmed = firstId === undefined || comparePositions(firstId, since) > 0 ? await this.trimmedAfter(since) : false;
    if (positionTime(since) < cutoff || trimmed) {
      return { ok: false, code: 'BEYOND_RETENTION', message: `the changes after Last-Event-ID are no longer retained (subscriptions.retention: ${this.o.retention.changes} changes or ${this.o.retention.minutes} minutes); live changes follow` };
    }
    const entries = (await this.o.redis.xrange(this.o.feedKey, `(${since}`, upTo, 'COUNT', this.o.retention.changes)) as Array<[string, string[]]>;
    const changes: FeedChange[] = [];
    for (const [id, fields] of entries) {
      const change = decode(fields);
      if (change) changes.push({ position: id, change });
    }
    return { ok: true, changes };
  }

  /** Were entries after `since` trimmed? Redis 7 keeps the largest deleted id (XINFO STREAM). */
  private async trimmedAfter(since: string): Promise<boolean> {
    const info = (await this.o.redis.call('XINFO', 'STREAM', this.o.feedKey).catch(() => null)) as unknown[] | null;
    if (!info) return true;
    const at = info.indexOf('max-deleted-entry-id');
    const maxDeleted = at >= 0 ? String(info[at + 1]) : undefined;
    if (maxDeleted === undefined || !isPosition(maxDeleted)) return true;
    return comparePositions(maxDeleted, since) > 0;
  }

  /** While local subscribers exist: their claims renewed (and announced), lapsed ones swept, the feed trimmed. */
  private async renew(): Promise<void> {
    if (this.localCounts.size === 0) return;
    try {
      const now = Date.now();
      const args: Array<string | number> = [];
      for (const member of this.localCounts.keys()) {
        args.push(now + CLAIM_TTL_MS, member);
        this.claimed.set(member, now + CLAIM_TTL_MS);
      }
      await this.o.redis.zadd(this.o.claimsKey, ...args);
      for (const member of this.localCounts.keys()) await this.o.bus.publish({ kind: 'subscribed-collections', id: member });
      await this.o.redis.zremrangebyscore(this.o.claimsKey, '-inf', now);
      // The minutes of retention: entries older than them go.
      await this.o.redis.xtrim(this.o.feedKey, 'MINID', '~', `${now - this.o.retention.minutes * 60_000}-0`);
      await this.refreshClaims();
    } catch (error) {
      this.o.onError(error, 'renewing subscription claims');
    }
  }

  private async refreshClaims(): Promise<void> {
    try {
      const now = Date.now();
      const flat = await this.o.redis.zrangebyscore(this.o.claimsKey, now, '+inf', 'WITHSCORES');
      // Merged, never cleared: a claim the bus announced while this read was under way stays, and
      // a claim gone from the set lapses here by its time (at most CLAIM_TTL_MS of writes published for nobody).
      const extend = (member: string, until: number) => this.claimed.set(member, Math.max(this.claimed.get(member) ?? 0, until));
      for (let i = 0; i + 1 < flat.length; i += 2) extend(flat[i]!, Number(flat[i + 1]));
      for (const m of this.localCounts.keys()) extend(m, now + CLAIM_TTL_MS);
    } catch (error) {
      this.o.onError(error, 'reading subscription claims');
    }
  }
}

function claimMember(db: string, collection: string): string {
  return JSON.stringify([db, collection]);
}

function decode(fields: string[]): Change | undefined {
  const at = fields.indexOf('c');
  if (at < 0) return undefined;
  try {
    const c = JSON.parse(fields[at + 1]!) as Change;
    return typeof c.db === 'string' && typeof c.collection === 'string' && typeof c.op === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}
