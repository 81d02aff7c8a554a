/**
 * The change feed through Redis (SPEC §6.5, "every replica sees every change"): the replica that
 * proxied a write appends its changes to one stream per service (`keys.subscriptionFeed`, capped
 * by `subscriptions.retention`: `MAXLEN ~ changes`, and `MINID` for the minutes; publisher.ts), and
 * every replica with subscribers reads the stream on a blocking connection of its own and hands
 * the changes of each read, in stream order, to its hub. Positions are the stream ids.
 *
 * Registration and publication are ordered in Redis (issue 53 item 7): a replica claims the
 * collections it has subscribers for in a sorted set (`keys.subscribedCollections`, scored by
 * when the claim lapses on Redis's clock, renewed every few seconds) and answers a subscriber only
 * once its claim is written and its reader has a position from before it; the writing replica
 * sends the change of every write to a collection some app's Subscription maps (the script
 * appends it only when claimed at the time of the write). What a replica heard from the others
 * decides nothing, so no write falls in a gap between a claim and its announcement.
 *
 * A replica without subscribers of its own reads nothing: the blocking reader and the renewal
 * timer run only while it has local subscribers (started by the first, stopped after the last).
 *
 * Redis faults (issue 53 item 11): a claim that lapsed before its renewal (Redis away longer than
 * the claim's life, or restarted empty) and changes trimmed before the reader came back are told
 * to the collection's subscribers as a gap (an error event saying to re-read), as are the changes
 * a writer had to drop (its gap entries). Across a failover that lost entries the writers resend
 * them (publisher.ts) and a reader skips the copies of what it had read (read-keys.ts).
 */
import type { Redis } from 'ioredis';
import type { ChangeBus } from '../../../store/change-bus.js';
import { renewSubscriptionClaims } from '../../../store/scripts/subscriptions/renew-subscription-claims.js';
import type { Change, FeedChange } from '../change.js';
import { comparePositions } from './positions.js';
import { decode, FeedPublisher, keyOf, publishAround, type FeedGap } from './publisher.js';
import { readFrom, ReadKeys, trimmedAfter, WENT_BACK } from './read-keys.js';
import { page, resumeStart, type Page, type ResumeStart, type Retained } from './retained.js';
import type { EndReason } from '../subscription.js';

export interface FeedOptions {
  readonly redis: Redis;
  /** The publisher's connection, when its WAITs need one of their own (else `redis`). */
  readonly publishing?: Redis;
  /** A connection of its own for XREAD BLOCK. */
  readonly blocking: Redis;
  /** Claims are announced here too: a hint for which writes to read back, never for publication. */
  readonly bus?: ChangeBus;
  readonly feedKey: string;
  readonly claimsKey: string;
  readonly batchKey: (token: string) => string;
  readonly retention: { readonly changes: number; readonly minutes: number };
  /** Replicas that must acknowledge a batch of changes (redis.waitForReplicas; publisher.ts). */
  readonly waitForReplicas?: number;
  readonly onError: (error: unknown, what: string) => void;
}

export interface FeedListener {
  /** The changes one read of the stream returned, in stream order. */
  changes(changes: FeedChange[]): void;
  gap(gap: FeedGap): void;
  /** The feed went back: positions after this may be before those already handed out (read-keys.ts). */
  wentBack?(): void;
}

const BLOCK_MS = 1000;
const READ_COUNT = 500;
const CLAIM_RENEW_MS = 5000;
const CLAIM_TTL_MS = 20_000;

export type { ResumeStart } from './retained.js';

export class ChangeFeed {
  private readonly publisher: FeedPublisher;
  /** Collections some app's Subscription maps: only their writes are sent to Redis. */
  private subscribable = new Set<string>();
  private readonly localCounts = new Map<string, number>();
  /** Per claimed member, its first claim while it is being written (later local subscribers wait for it too). */
  private readonly claiming = new Map<string, { readonly written: Promise<void>; done: boolean }>();
  private position = '0-0';
  private running = false;
  /** The blocking reader: wanted while local subscribers exist; `reading` while its loop is alive. */
  private wantReading = false;
  private reading = false;
  private readingStarted: Promise<void> = Promise.resolve();
  private renewTimer: NodeJS.Timeout | undefined;
  private listener: FeedListener | undefined;
  /** The keys of entries read, to skip copies a writer appended again after a failover. */
  private readonly readKeys = new ReadKeys();
  /** What a resume reads (retained.ts). */
  private readonly retained: Retained;
  /** The blocking connection (re)connected: the stream it now reads may end before this position. */
  private reconnected = false;

  /** Claims heard of (the bus, the last batch written, a read at start), with when they lapse: a hint only, Redis decides publication. */
  private readonly heardClaimed = new Map<string, number>();
  private unsubscribeBus: (() => void) | undefined;

  constructor(private readonly o: FeedOptions) {
    this.publisher = new FeedPublisher({
      ...o,
      redis: o.publishing ?? o.redis,
      onClaims: (claimed, unclaimed) => {
        for (const m of claimed) this.heardClaimed.set(m, Date.now() + CLAIM_TTL_MS);
        for (const m of unclaimed) this.heardClaimed.delete(m);
      },
    });
    this.retained = { redis: o.redis, feedKey: o.feedKey, retention: o.retention, readKeys: this.readKeys };
    o.blocking.on('ready', () => (this.reconnected = true));
  }

  /**
   * Is the collection subscribed somewhere, as far as this replica knows (its own subscribers, or
   * the claims its last batch found)? Decides only whether a write's state is read back for the
   * change; a change without it is re-read at delivery.
   */
  likelyClaimed(db: string, collection: string, wants?: StateBefore): boolean {
    const member = wants ? claimMember(db, collection, wants) : claimMember(db, collection);
    return this.localCounts.has(member) || (this.heardClaimed.get(member) ?? 0) >= Date.now();
  }

  /** The last position handed to the hub: a resume reads up to it, live changes come after it. */
  get current(): string {
    return this.position;
  }

  /** Does some app map a Subscription field to anything, or another reader want writes (else a write costs nothing here)? */
  get anyWanted(): boolean {
    return this.subscribable.size > 0 || this.alsoWanted !== undefined;
  }

  /** Is the blocking reader running (tests: a replica without subscribers does not read)? */
  get readerRunning(): boolean {
    return this.reading;
  }

  /** Changes waiting for Redis on this replica. */
  get unpublished(): number {
    return this.publisher.waiting;
  }

  /** May a subscriber want this collection's writes (an app maps it)? One Set lookup, on the write path. */
  wants(db: string, collection: string): boolean {
    return (this.subscribable.size > 0 && this.subscribable.has(claimMember(db, collection))) || (this.alsoWanted?.(db, collection) ?? false);
  }

  /** Collections another reader of the feed may claim besides the apps' (MCP's resource notifications, SPEC §11.1). */
  alsoWanted: ((db: string, collection: string) => boolean) | undefined;

  /** The collections the apps' Subscription fields map, as `[db, collection]`. */
  setSubscribable(collections: Iterable<readonly [string, string]>): void {
    const next = new Set<string>();
    for (const [db, collection] of collections) next.add(claimMember(db, collection));
    this.subscribable = next;
  }

  async start(listener: FeedListener): Promise<void> {
    this.listener = listener;
    this.running = true;
    this.unsubscribeBus = this.o.bus?.on((m) => {
      if (m === 'resync') void this.hearClaims();
      else if (m.kind === 'subscribed-collections' && m.id) this.heardClaimed.set(m.id, Date.now() + CLAIM_TTL_MS);
    });
    await this.hearClaims();
  }

  /** The claims in Redis, as a hint (at start, and after the bus reconnects). */
  private async hearClaims(): Promise<void> {
    try {
      const members = await this.o.redis.zrange(this.o.claimsKey, 0, -1);
      for (const m of members) this.heardClaimed.set(m, Math.max(this.heardClaimed.get(m) ?? 0, Date.now() + CLAIM_TTL_MS));
    } catch (error) {
      this.o.onError(error, 'reading subscription claims');
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wantReading = false;
    this.stopRenewing();
    this.unsubscribeBus?.();
    await this.publisher.stop();
    if (this.localCounts.size > 0) {
      const members = [...this.localCounts.keys()];
      await this.o.redis.zrem(this.o.claimsKey, ...members).catch(() => {});
    }
  }

  /** Queues changes for the stream (publisher.ts: off the request path, kept through Redis faults). */
  publish(changes: readonly Change[]): void {
    this.publisher.publish(changes, claimMember);
  }

  /** A write's changes ahead of its answer, and again after it for what was not appended (publisher.ts `publishAround`). */
  publishAround(changes: readonly Change[]): Promise<() => void> {
    return publishAround({ ahead: (c) => this.publisher.track(c, claimMember), now: (c) => this.publish(c) }, changes);
  }

  /**
   * A local subscriber for the collection: the reader started (from the stream's last entry) if it
   * was not running, and the collection claimed in Redis, before the subscription is answered.
   * Throws when Redis cannot do it; nothing is left counted then.
   */
  async claim(db: string, collection: string, also?: StateBefore): Promise<void> {
    const members = membersOf(db, collection, also);
    for (const member of members) this.localCounts.set(member, (this.localCounts.get(member) ?? 0) + 1);
    try {
      if (!this.renewTimer) {
        this.renewTimer = setInterval(() => void this.renew(), CLAIM_RENEW_MS);
        this.renewTimer.unref();
      }
      await this.startReading();
      for (const [i, member] of members.entries()) await this.hold(member, i > 0);
    } catch (error) {
      this.release(db, collection, also);
      throw error;
    }
  }

  /**
   * One member written into the claims (once while it holds), then announced; a `StateBefore`
   * hint's announcement awaited (`settled`): Redis has pushed it to the other replicas before the
   * caller is answered, so a write the caller sends next finds it heard.
   */
  private async hold(member: string, settled: boolean): Promise<void> {
    let claimed = this.claiming.get(member);
    if (!claimed) {
      const c = { written: renewSubscriptionClaims.run(this.o.redis, [this.o.claimsKey], [CLAIM_TTL_MS, member]).then(() => void (c.done = true)), done: false };
      this.claiming.set(member, (claimed = c));
      // Kept while it holds: a later subscriber waits for the same write; a failed one is tried again by the next.
      c.written.catch(() => this.claiming.get(member) === c && this.claiming.delete(member));
    }
    await claimed.written;
    // Announced after it is written: writers then read the state of its writes back (a hint; Redis decides publication).
    const announced = this.o.bus?.publish({ kind: 'subscribed-collections', id: member });
    if (settled) await announced;
  }

  /**
   * The subscriber left. The claim lapses by itself when no local subscriber renews it; after the
   * last local subscriber the reader and the renewals stop.
   */
  release(db: string, collection: string, also?: StateBefore): void {
    for (const member of membersOf(db, collection, also)) {
      const count = (this.localCounts.get(member) ?? 1) - 1;
      if (count <= 0) {
        this.localCounts.delete(member);
        this.claiming.delete(member);
      } else this.localCounts.set(member, count);
    }
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
        if (newest !== undefined && comparePositions(newest, this.position) > 0) {
          this.position = newest;
          // Counted as read: a failover that loses what follows is read on from here (read-keys.ts).
          this.readKeys.repeated(keyOf(last[0]![1]), newest);
        }
      } catch (error) {
        this.reading = false;
        throw error;
      }
      void this.readLoop();
    })();
    return this.readingStarted;
  }

  /** Reads the stream while local subscribers exist; hands each read's changes over together (the hub batches its re-reads). */
  private async readLoop(): Promise<void> {
    let failed = false;
    while (this.running && this.wantReading) {
      try {
        if (this.reconnected) await this.followNewest();
        const reply = (await this.o.blocking.xread('COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', this.o.feedKey, this.position)) as Array<[string, Array<[string, string[]]>]> | null;
        if (failed) {
          failed = false;
          // Back after a fault: what was trimmed meanwhile past this position never comes.
          if (await this.trimmedAfter(this.position)) this.listener?.gap({ db: null, collection: null, reason: TRIMMED });
        }
        if (!reply) continue;
        let changes: FeedChange[] = [];
        for (const [, entries] of reply) {
          for (const [id, fields] of entries) {
            this.position = id;
            const entry = decode(id, fields);
            if (this.readKeys.repeated(entry?.key, id)) continue;
            if (entry?.change) changes.push({ position: id, change: entry.change });
            else if (entry?.gap) {
              // In order: the changes before the gap go first.
              if (changes.length > 0) this.listener?.changes(changes);
              changes = [];
              this.listener?.gap(entry.gap);
            }
          }
        }
        if (changes.length > 0) this.listener?.changes(changes);
      } catch (error) {
        if (!this.running) break;
        failed = true;
        this.o.onError(error, 'reading the subscription feed');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    this.reading = false; // in the same turn as the check above: a claim meanwhile starts a new loop
  }

  /** After a reconnect: a stream that ends before this position (a failover lost its last entries) is read on from where this reader was in it, so nothing appended there is skipped. */
  private async followNewest(): Promise<void> {
    const from = await readFrom(this.o.redis, this.o.feedKey, this.position, this.readKeys);
    this.reconnected = false;
    if (from.position !== this.position) this.listener?.wentBack?.();
    this.position = from.position;
    if (from.lost) this.listener?.gap({ db: null, collection: null, reason: WENT_BACK });
  }

  /** Can a resume from `since` be served (retained, not from the future)? It reads up to the current position, then pages on (retained.ts). */
  resumeStart(since: string): Promise<ResumeStart> {
    return resumeStart(this.retained, since, this.position);
  }

  /** A page of a resume (retained.ts). */
  page(after: string, upTo: string, count: number, since = after): Promise<Page> {
    return page(this.retained, { after, upTo, count, since });
  }

  /** Were entries after `since` trimmed (read-keys.ts)? */
  private trimmedAfter(since: string): Promise<boolean> {
    return trimmedAfter(this.o.redis, this.o.feedKey, since);
  }

  /** While local subscribers exist: their claims renewed (lapsed ones told), others' lapsed ones swept, the feed trimmed. */
  private async renew(): Promise<void> {
    if (this.localCounts.size === 0) return;
    try {
      const members = [...this.localCounts.keys()];
      const claims = new Map<string, unknown>();
      for (const m of members) {
        const c = this.claiming.get(m);
        if (c?.done) claims.set(m, c);
      }
      const lapsed = (await renewSubscriptionClaims.run(this.o.redis, [this.o.claimsKey], [CLAIM_TTL_MS, ...members])) as string[];
      for (const member of members) void this.o.bus?.publish({ kind: 'subscribed-collections', id: member });
      for (const member of lapsed) {
        // Only a claim held since before this renewal lapsed; one made meanwhile is new.
        const held = claims.get(member);
        if (held === undefined || this.claiming.get(member) !== held) continue;
        const [db, collection, wants] = JSON.parse(member) as [string, string, StateBefore?];
        if (wants !== undefined) continue; // a hint beside the collection's own claim, which tells the gap
        this.listener?.gap({
          db,
          collection,
          reason: {
            code: 'CHANGES_LOST',
            message: `changes to ${db}.${collection} may have been missed: Redis was unavailable longer than this replica's claim on the collection lasts; re-read what this subscription follows`,
          },
        });
      }
      // The minutes of retention: entries older than them go.
      await this.o.redis.xtrim(this.o.feedKey, 'MINID', '~', `${Date.now() - this.o.retention.minutes * 60_000}-0`);
    } catch (error) {
      this.o.onError(error, 'renewing subscription claims');
    }
  }
}

const TRIMMED: EndReason = {
  code: 'CHANGES_LOST',
  message: 'changes were trimmed from the feed (subscriptions.retention) before this replica could read them again after a Redis fault; re-read what this subscription follows',
};

/**
 * Who wants a single-document write's state before it (SPEC §11.1, issue 51): `before`, every such
 * write's (an MCP collection listener); `deletes`, a delete's (a GraphQL subscriber to deletes). A
 * claim of its own beside the collection's, a hint for writers like the collection's (the
 * publish script never sees it), so writes to a collection only others follow read nothing first.
 */
export type StateBefore = 'before' | 'deletes';

function claimMember(db: string, collection: string, wants?: StateBefore): string {
  return JSON.stringify(wants ? [db, collection, wants] : [db, collection]);
}

function membersOf(db: string, collection: string, also: StateBefore | undefined): string[] {
  return also ? [claimMember(db, collection), claimMember(db, collection, also)] : [claimMember(db, collection)];
}
