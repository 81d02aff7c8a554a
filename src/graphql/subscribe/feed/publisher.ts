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
 *
 * Failover (issue 53 item 11): Redis replicates asynchronously, so a batch a master took may die
 * with it. With `waitForReplicas` (redis.waitForReplicas: 1 by default behind Sentinel and on a
 * cluster) the script is pipelined with a WAIT, and a batch leaves the publisher only once a
 * replica acknowledged it; a batch whose master was lost before that is sent again, with the same
 * token, to the promoted replica (appended once: the token came along if the batch did; a reader
 * that had read the lost copy skips the new one by its `k`, feed.ts). A replica that does not
 * acknowledge within a second (slow, or gone for good) does not stall writers: replica-wait.ts.
 *
 * A write's changes are published ahead of its answer and again, for what was not appended, once
 * the answer left (`publishAround`): see there for why both. Both halves of the stream's entry
 * format live here: what `send` writes and what `decode` reads back (feed.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { publishSubscribedChanges } from '../../../store/scripts/subscriptions/publish-subscribed-changes.js';
import type { Change } from '../change.js';
import type { EndReason } from '../subscription.js';
import { ReplicaWait } from './replica-wait.js';

export interface PublisherOptions {
  readonly redis: Redis;
  readonly feedKey: string;
  readonly claimsKey: string;
  readonly batchKey: (token: string) => string;
  readonly retention: { readonly changes: number; readonly minutes: number };
  readonly onError: (error: unknown, what: string) => void;
  /** Replicas that must acknowledge a batch before it leaves (WAIT); 0 or absent: none (a single node). */
  readonly waitForReplicas?: number;
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
  /** The write's tracker when it was published ahead of its answer (`track`). */
  readonly tracker?: Tracker;
  readonly change?: Change;
  /** One attempt to send it has ended (taken or failed). */
  tried?: boolean;
  /** Its tracker was told what became of it (once, however often the batch is sent). */
  settled?: boolean;
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
  /** A master took it (its reply was handled); it waits for a replica to acknowledge it. */
  appended?: boolean;
}

/** What became of one write's changes, published ahead of its answer. */
export interface Publication {
  /** Settles once Redis took them or one attempt to send them failed: what the writer's answer may wait for. */
  readonly attempted: Promise<void>;
  /** The changes Redis took while no replica had claimed their collection (so not appended); settles once each was taken or dropped. */
  readonly unclaimed: Promise<Change[]>;
}

class Tracker implements Publication {
  readonly attempted: Promise<void>;
  readonly unclaimed: Promise<Change[]>;
  private untried: number;
  private unsettled: number;
  private readonly left: Change[] = [];
  private markAttempted!: () => void;
  private settle!: (left: Change[]) => void;

  constructor(count: number) {
    this.untried = this.unsettled = count;
    this.attempted = new Promise((resolve) => (this.markAttempted = resolve));
    this.unclaimed = new Promise((resolve) => (this.settle = resolve));
  }

  tried(): void {
    if (--this.untried === 0) this.markAttempted();
  }

  /** Taken by Redis (`claimed`: appended), or dropped (`null`: a gap entry announces it). */
  ended(change: Change, claimed: boolean | null): void {
    if (claimed === false) this.left.push(change);
    if (--this.unsettled === 0) this.settle(this.left);
  }
}

/** How long a writer's answer waits for Redis to take its changes (then it goes; they are still sent). */
export const AHEAD_WAIT_MS = 1000;

/**
 * Publishes a write's changes ahead of its answer, and returns what to run once the answer left.
 *
 * Ahead, so that the order of the feed is the order in which clients saw their writes answered: a
 * client writing through a load balancer sends its next write to any replica once it has this
 * answer, and that write's change must not reach subscribers first (a subscriber keeping a view
 * would keep the older state). The answer waits until Redis has run the publish script on them,
 * at most AHEAD_WAIT_MS (a stalled Redis delays writes to subscribed collections by that much).
 *
 * Again once the answer left, for those Redis took while no replica had claimed their collection
 * (the script appends only claimed ones): a subscriber registered on another replica after the
 * script ran, and answered before this write's answer, has its claim in Redis by then and receives
 * them (issue 53 item 7). A change is appended at most once either way.
 */
export async function publishAround(publisher: { ahead(changes: readonly Change[]): Publication; now(changes: readonly Change[]): void }, changes: readonly Change[]): Promise<() => void> {
  if (changes.length === 0) return () => {};
  const publication = publisher.ahead(changes);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([publication.attempted, new Promise<void>((resolve) => (timer = setTimeout(resolve, AHEAD_WAIT_MS)))]);
  clearTimeout(timer);
  return () => void publication.unclaimed.then((left) => left.length > 0 && publisher.now(left));
}

/** What became of a tracked entry, told its tracker once. */
function settle(e: Entry, claimed: boolean | null): void {
  if (!e.tracker || e.settled) return;
  e.settled = true;
  e.tracker.ended(e.change!, claimed);
}

/** One attempt to send a tracked entry ended: counted once. */
function tried(e: Entry): void {
  if (!e.tracker || e.tried) return;
  e.tried = true;
  e.tracker.tried();
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
  /** With replicas wanted: what follows each batch's script (replica-wait.ts). */
  private readonly replicas: ReplicaWait | undefined;
  /** How long a batch is tried before it is given up (and announced as a gap). */
  private readonly giveUpMs: number;

  constructor(private readonly o: PublisherOptions) {
    this.giveUpMs = o.retention.minutes * 60_000;
    const wanted = o.waitForReplicas ?? 0;
    if (wanted > 0)
      this.replicas = new ReplicaWait(wanted, (error) =>
        o.onError(error, 'replicating subscription changes (let go unreplicated: a failover now could lose them; batches wait again once a replica catches up)'),
      );
  }

  /** Changes waiting for Redis (tests, metrics). */
  get waiting(): number {
    return this.queue.length + (this.batch?.entries.length ?? 0);
  }

  /** Queues changes for the stream; written together on the next turn of the event loop. */
  publish(changes: readonly Change[], member: (db: string, collection: string) => string): void {
    this.enqueue(changes, member, undefined);
  }

  /** As `publish`, telling what became of them (`publishAround`). */
  track(changes: readonly Change[], member: (db: string, collection: string) => string): Publication {
    const tracker = new Tracker(changes.length);
    this.enqueue(changes, member, tracker);
    return tracker;
  }

  private enqueue(changes: readonly Change[], member: (db: string, collection: string) => string, tracker: Tracker | undefined): void {
    if (changes.length === 0) return;
    const at = Date.now();
    for (const change of changes) {
      const payload = JSON.stringify(change);
      this.queue.push({ member: member(change.db, change.collection), db: change.db, collection: change.collection, at, field: 'c', payload, ...(tracker ? { tracker, change } : {}) });
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
          const sent = await this.send(batch);
          // A batch sent again because its acknowledgement failed: its trackers and claims were told the first time.
          if (!batch.appended) this.taken(batch, sent.reply as unknown[]);
          batch.appended = true;
          if ('then' in sent) this.replicas?.answered(sent.then);
          this.batch = null;
          failures = 0;
        } catch (error) {
          for (const e of batch.entries) tried(e);
          if (failures++ === 0) this.o.onError(error, 'publishing subscription changes (kept, and sent again until Redis takes them)');
          if (this.stopping || Date.now() - batch.since > this.giveUpMs) {
            this.batch = null;
            // Never taken, or taken by a master no replica acknowledged it from: told as lost (at worst a needless re-read).
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

  /** Redis took the batch: its reply names the claimed members (`-1` first: a batch the script had already appended). */
  private taken(batch: Batch, reply: unknown[]): void {
    const known = Array.isArray(reply) && reply[0] !== -1;
    const claimed = known ? reply.slice(1).map(String) : [];
    if (known && this.o.onClaims) {
      const unclaimed = [...new Set(batch.entries.filter((e) => e.field === 'c').map((e) => e.member))].filter((m) => !claimed.includes(m));
      this.o.onClaims(claimed, unclaimed);
    }
    for (const e of batch.entries) {
      if (!e.tracker) continue;
      tried(e);
      // A batch already appended (a resend after a stall): its claims are not known again; take them as appended rather than risk twice.
      settle(e, known ? claimed.includes(e.member) : true);
    }
  }

  /** The script, and with replicas wanted what follows it in the same round trip (replica-wait.ts). */
  private async send(batch: Batch): Promise<{ reply: unknown; then?: unknown }> {
    const now = Date.now();
    const args: Array<string | number> = [3, this.o.feedKey, this.o.claimsKey, this.o.batchKey(batch.token), this.o.retention.changes, this.giveUpMs + 60_000, batch.token];
    for (const e of batch.entries) args.push(e.member, Math.max(0, now - e.at), e.field, e.payload);
    const then = this.replicas?.next();
    if (!then) return { reply: await publishSubscribedChanges.runWith(this.o.redis, args) };
    return publishSubscribedChanges.evalThen(this.o.redis, args, then);
  }

  /** Changes that will not reach the feed: counted per collection for the next gap entry. */
  private drop(entries: readonly Entry[]): void {
    for (const e of entries) {
      tried(e);
      settle(e, null);
      const prior = this.lost.get(e.member);
      this.lost.set(e.member, { db: e.db, collection: e.collection, lost: (prior?.lost ?? 0) + (e.field === 'g' ? (e.lost ?? 0) : 1) });
    }
  }
}

/** Changes of a collection its subscribers will not get: they are told why, to re-read. `collection` null: every collection. */
export interface FeedGap {
  readonly db: string | null;
  readonly collection: string | null;
  readonly reason: EndReason;
}

/**
 * One entry of the feed: a change, or a writer's gap. `key`: its batch token and place (`k`),
 * the same for a copy of it appended again after a failover.
 */
export type FeedEntry =
  | { readonly position: string; readonly change: Change; readonly gap?: undefined; readonly key?: string }
  | { readonly position: string; readonly gap: FeedGap; readonly change?: undefined; readonly key?: string };

/** An entry's `k` (`send`): its batch token and place. */
export function keyOf(fields: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'k') return fields[i + 1];
  return undefined;
}

/** An entry of the stream as `send` wrote it: a change (`c`) or a gap notice (`g`), with its `k`; undefined for anything else. */
export function decode(position: string, fields: string[]): FeedEntry | undefined {
  let entry: FeedEntry | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    try {
      if (entry === undefined && fields[i] === 'c') {
        const c = JSON.parse(fields[i + 1]!) as Change;
        if (typeof c.db !== 'string' || typeof c.collection !== 'string' || typeof c.op !== 'string') return undefined;
        entry = { position, change: c };
      } else if (entry === undefined && fields[i] === 'g') {
        const g = JSON.parse(fields[i + 1]!) as GapEntry;
        if (typeof g.db !== 'string' || typeof g.collection !== 'string') return undefined;
        const message = `${Number(g.lost) || 'some'} change(s) to ${g.db}.${g.collection} could not be published while Redis was unavailable; re-read what this subscription follows`;
        entry = { position, gap: { db: g.db, collection: g.collection, reason: { code: 'CHANGES_LOST', message } } };
      }
    } catch {
      return undefined;
    }
  }
  const key = entry && keyOf(fields);
  return entry && key !== undefined ? { ...entry, key } : entry;
}
