/**
 * The writing side of the change feed (SPEC §6.5): the changes of the writes this replica proxied,
 * appended to the stream off the request path, in the order they were written, through one script
 * (store/scripts/publish-subscribed-changes.ts) that appends a change only when some replica has
 * claimed its collection. Redis decides, not what this replica has heard: a subscriber answered
 * before a write's answer is in the claims before the write's change reaches Redis (issue 53
 * item 7).
 *
 * Redis faults (issue 53 item 11): a batch that fails (Redis down, frozen past the command
 * deadline, failing over) is kept and sent again, with the same token, until Redis takes it; the
 * script appends a token's batch once, so a batch that a frozen Redis ran after all, or that
 * ioredis resent after the stall watchdog's reconnect, is not appended twice under two ids.
 * What waits is bounded (count, bytes, and the retention's minutes); what a bound drops is never
 * dropped silently: a gap entry naming the collection and how many changes were lost goes to the
 * feed first once Redis answers, and every subscriber of that collection is told to re-read.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { publishSubscribedChanges } from '../../store/scripts/subscriptions/publish-subscribed-changes.js';
import type { Change } from './change.js';

export interface PublisherOptions {
  readonly redis: Redis;
  readonly feedKey: string;
  readonly claimsKey: string;
  readonly batchKey: (token: string) => string;
  readonly retention: { readonly changes: number; readonly minutes: number };
  readonly onError: (error: unknown, what: string) => void;
  /** Told, per batch written, which of its members were claimed and which were not. */
  readonly onClaims?: (claimed: readonly string[], unclaimed: readonly string[]) => void;
}

/** What a gap entry (`g`) carries: changes of this collection that never reached the feed. */
export interface GapEntry {
  readonly db: string;
  readonly collection: string;
  readonly lost: number;
}

interface Entry {
  readonly member: string;
  readonly db: string;
  readonly collection: string;
  /** When it was written (this replica's clock; only its age is sent). */
  readonly at: number;
  readonly field: 'c' | 'g';
  readonly payload: string;
  readonly lost?: number;
}

interface Batch {
  readonly token: string;
  readonly entries: Entry[];
  readonly since: number;
}

/** Changes sent in one script call. */
const BATCH = 500;
/** Changes waiting for Redis at most, and their bytes (the oldest are dropped, and counted in a gap). */
const MAX_WAITING = 10_000;
const MAX_WAITING_BYTES = 32 * 1024 * 1024;
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 2000;

export class FeedPublisher {
  private queue: Entry[] = [];
  private queuedBytes = 0;
  private batch: Batch | null = null;
  /** Per claim member, changes dropped and not yet announced by a gap entry. */
  private readonly lost = new Map<string, GapEntry>();
  private flushing: Promise<void> | null = null;
  private stopping = false;
  /** How long a batch is tried before it is given up (and announced as a gap). */
  private readonly giveUpMs: number;

  constructor(private readonly o: PublisherOptions) {
    this.giveUpMs = o.retention.minutes * 60_000;
  }

  /** Changes waiting for Redis (tests, metrics). */
  get waiting(): number {
    return this.queue.length + (this.batch?.entries.length ?? 0);
  }

  /** Queues changes for the stream; written together on the next turn of the event loop. */
  publish(changes: readonly Change[], member: (db: string, collection: string) => string): void {
    if (changes.length === 0) return;
    const at = Date.now();
    for (const change of changes) {
      const payload = JSON.stringify(change);
      this.queue.push({ member: member(change.db, change.collection), db: change.db, collection: change.collection, at, field: 'c', payload });
      this.queuedBytes += payload.length;
    }
    while (this.queue.length > MAX_WAITING || (this.queuedBytes > MAX_WAITING_BYTES && this.queue.length > 1)) {
      const oldest = this.queue.shift()!;
      this.queuedBytes -= oldest.payload.length;
      this.drop([oldest]);
    }
    this.schedule();
  }

  /** Tries what waits one last time, for at most `ms`. */
  async stop(ms = 2000): Promise<void> {
    this.stopping = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flushing, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  private schedule(): void {
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.run());
  }

  private async run(): Promise<void> {
    let failures = 0;
    try {
      for (;;) {
        if (!this.batch) {
          if (this.queue.length === 0 && this.lost.size === 0) return;
          // Gaps first: a subscriber learns of what was lost before what came after it.
          const gaps = [...this.lost.entries()].map(([member, g]): Entry => ({ member, db: g.db, collection: g.collection, at: Date.now(), field: 'g', payload: JSON.stringify(g), lost: g.lost }));
          this.lost.clear();
          const entries = [...gaps, ...this.queue.splice(0, BATCH)];
          for (const e of entries) if (e.field === 'c') this.queuedBytes -= e.payload.length;
          this.batch = { token: randomUUID(), entries, since: Date.now() };
        }
        const batch = this.batch;
        try {
          const reply = (await this.send(batch)) as unknown[];
          this.batch = null;
          if (Array.isArray(reply) && reply[0] !== -1 && this.o.onClaims) {
            const claimed = reply.slice(1).map(String);
            const unclaimed = [...new Set(batch.entries.filter((e) => e.field === 'c').map((e) => e.member))].filter((m) => !claimed.includes(m));
            this.o.onClaims(claimed, unclaimed);
          }
          failures = 0;
        } catch (error) {
          if (failures++ === 0) this.o.onError(error, 'publishing subscription changes (kept, and sent again until Redis takes them)');
          if (this.stopping || Date.now() - batch.since > this.giveUpMs) {
            this.batch = null;
            this.drop(batch.entries);
            if (this.stopping) return;
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MIN_MS * failures, RETRY_MAX_MS)));
        }
      }
    } finally {
      this.flushing = null;
      if (!this.stopping && (this.queue.length > 0 || this.batch)) this.schedule();
    }
  }

  private send(batch: Batch): Promise<unknown> {
    const now = Date.now();
    const args: Array<string | number> = [3, this.o.feedKey, this.o.claimsKey, this.o.batchKey(batch.token), this.o.retention.changes, this.giveUpMs + 60_000];
    for (const e of batch.entries) args.push(e.member, Math.max(0, now - e.at), e.field, e.payload);
    return publishSubscribedChanges.runWith(this.o.redis, args);
  }

  /** Changes that will not reach the feed: counted per collection for the next gap entry. */
  private drop(entries: readonly Entry[]): void {
    for (const e of entries) {
      const prior = this.lost.get(e.member);
      this.lost.set(e.member, { db: e.db, collection: e.collection, lost: (prior?.lost ?? 0) + (e.field === 'g' ? (e.lost ?? 0) : 1) });
    }
  }
}
