/**
 * The subscriptions of one replica (SPEC §6.5): registered under their collection, bounded per
 * principal and per process, and fed the changes of the feed in order. The changes one read of
 * the feed returned are handled together: per collection, the subscribers are grouped by identity
 * (group.ts), and each group whose members follow some of the batch's ops re-reads the batch's
 * documents once, by `_id` with `$in` (seen.ts: its readFilter, projectResponse and the backend's
 * ACL decide, reads/ and backend/ as for a query); then, change by change in feed order, the
 * members the document may match (the group's equality index) are matched on what the identity
 * may see and their selection is executed on the change.
 *
 * A change carries its own state (the document right after the write, unprojected; change.ts):
 * the identity's readFilter and the find are matched on it and projectResponse applied, re-read
 * only where the backend may show this identity otherwise (seen.ts). Deletes carry no document:
 * `{op: "delete", _id}` reaches only subscribers whose find binds nothing but `_id` and whose read
 * permission has no readFilter. A GraphQL delete carries the document it read first, unprojected;
 * it is matched against the readFilter and the find (no re-read), with projectResponse applied.
 *
 * Every second each subscription is checked again (its credentials, the ACL, its app): a revoked
 * key, a lost permission or a changed app ends it with an error naming why.
 */
import type { ExecutionResult } from 'graphql';
import type { BackendReader, ReadPolicy } from '../types.js';
import type { Change, FeedChange } from './change.js';
import type { ChangeFeed } from './feed/feed.js';
import type { FeedGap } from './feed/publisher.js';
import { SubscriberGroup, type ActiveSubscription, type ChangeValue, type PendingChange } from './group.js';
import { DELETE_SEEN, seeAll } from './seen.js';
import type { EndReason, Transport } from './subscription.js';

export type { ActiveSubscription, ChangeValue } from './group.js';

export interface HubOptions {
  readonly feed: ChangeFeed;
  readonly reader: BackendReader;
  readonly readPolicy: ReadPolicy | undefined;
  readonly maxPerPrincipal: number;
  readonly maxPerProcess: number;
  readonly onError: (error: unknown, what: string) => void;
  readonly counted: (outcome: 'delivered' | 'dropped') => void;
}

const RECHECK_MS = 1000;

export class SubscriptionHub {
  /** Per collection, per identity: the subscribers that share one re-read. */
  private readonly byCollection = new Map<string, CollectionGroups>();
  private readonly groupOf = new WeakMap<ActiveSubscription, SubscriberGroup>();
  /** When each subscription was registered (a batch reaches only those registered before it was handed in). */
  private readonly addedAt = new WeakMap<ActiveSubscription, number>();
  private additions = 0;
  private readonly perPrincipal = new Map<string, number>();
  private readonly all = new Set<ActiveSubscription>();
  /** Counted against the bounds but not yet registered (their claim is being written): not in the gauge. */
  private readonly starting = new Set<ActiveSubscription>();
  private readonly timer: NodeJS.Timeout;
  private checking = false;
  private closing = false;
  /** Per identity, the last change whose results are being queued: the next one queues after it. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly o: HubOptions) {
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
  }

  /** Registered subscriptions (those whose start is still under way are not: a write now may not reach them yet). */
  count(transport?: Transport): number {
    if (!transport) return this.all.size - this.starting.size;
    let n = 0;
    for (const s of this.all) if (s.transport === transport && !this.starting.has(s)) n++;
    return n;
  }

  /** Room for one more subscription of this principal? The error naming the bound, or null. */
  refusal(principalKey: string): EndReason | null {
    if (this.closing) return { message: 'this replica is shutting down; reconnect', code: 'SHUTTING_DOWN' };
    if (this.all.size >= this.o.maxPerProcess)
      return { message: `this replica holds its most subscriptions (subscriptions.maxPerProcess: ${this.o.maxPerProcess}); retry later or elsewhere`, code: 'TOO_MANY_SUBSCRIPTIONS' };
    if ((this.perPrincipal.get(principalKey) ?? 0) >= this.o.maxPerPrincipal) {
      return { message: `you hold the most subscriptions one caller may hold (subscriptions.maxPerPrincipal: ${this.o.maxPerPrincipal}); end one first`, code: 'TOO_MANY_SUBSCRIPTIONS' };
    }
    return null;
  }

  /**
   * Registers a subscription: counted, grouped, and its collection claimed in Redis before this
   * resolves (then every write answered afterwards reaches it, from any replica). Null when
   * registered, the bound's error when one refuses it; throws when Redis cannot take the claim,
   * and then nothing of it stays counted (issue 53 item 11).
   */
  async add(sub: ActiveSubscription): Promise<EndReason | null> {
    const refused = this.refusal(sub.principalKey);
    if (refused) return refused;
    this.perPrincipal.set(sub.principalKey, (this.perPrincipal.get(sub.principalKey) ?? 0) + 1);
    this.all.add(sub);
    this.addedAt.set(sub, ++this.additions);
    const key = collectionKey(sub.db, sub.collection);
    let groups = this.byCollection.get(key);
    if (!groups) this.byCollection.set(key, (groups = { byRead: new Map(), byIdentity: new Map() }));
    // An identity stays in one group (its subscriptions share its re-reads and keep one order),
    // even when its backend headers differ between subscriptions (a minted JWT's issue time).
    let group = groups.byIdentity.get(sub.identityKey) ?? groups.byRead.get(sub.readKey);
    if (!group) groups.byRead.set(sub.readKey, (group = new SubscriberGroup(sub.readKey)));
    group.add(sub);
    groups.byIdentity.set(sub.identityKey, group);
    this.groupOf.set(sub, group);
    this.starting.add(sub);
    try {
      // A subscriber to deletes wants a delete's document, read before it (issue 51).
      await this.o.feed.claim(sub.db, sub.collection, sub.on.has('delete') ? 'deletes' : undefined);
    } catch (error) {
      this.forget(sub);
      throw error;
    } finally {
      this.starting.delete(sub);
    }
    return null;
  }

  remove(sub: ActiveSubscription, reason: EndReason | null): void {
    if (!this.forget(sub)) return;
    this.o.feed.release(sub.db, sub.collection, sub.on.has('delete') ? 'deletes' : undefined);
    if (reason?.code === 'SLOW_SUBSCRIBER') this.o.counted('dropped');
  }

  /** Un-counts and un-groups a subscription (its claim is the feed's business); false when it was not here. */
  private forget(sub: ActiveSubscription): boolean {
    if (!this.all.delete(sub)) return false;
    const n = (this.perPrincipal.get(sub.principalKey) ?? 1) - 1;
    if (n <= 0) this.perPrincipal.delete(sub.principalKey);
    else this.perPrincipal.set(sub.principalKey, n);
    const key = collectionKey(sub.db, sub.collection);
    const groups = this.byCollection.get(key);
    const group = this.groupOf.get(sub);
    if (groups && group) {
      group.remove(sub);
      if (!group.hasIdentity(sub.identityKey)) groups.byIdentity.delete(sub.identityKey);
      if (group.size === 0) groups.byRead.delete(group.readKey);
      if (groups.byRead.size === 0) this.byCollection.delete(key);
    }
    return true;
  }

  /** The feed went back under its reader (a failover lost its last entries): later positions may be before those handed out. */
  rebase(): void {
    for (const sub of this.all) sub.stream.rebase();
  }

  /**
   * Changes of a collection (`null`: of every collection) that its subscribers here will not get
   * (a Redis fault): each is told with an error event, to re-read, and goes on (issue 53 item 11).
   */
  tell(gap: FeedGap, only?: ActiveSubscription): void {
    const applies = (sub: ActiveSubscription) => (gap.db === null || sub.db === gap.db) && (gap.collection === null || sub.collection === gap.collection);
    if (only) {
      if (applies(only)) only.stream.notice(gap.reason);
      return;
    }
    for (const sub of this.all) if (applies(sub) && !this.starting.has(sub)) sub.stream.notice(gap.reason, true);
  }

  /**
   * The changes of one read of the feed (or a resume's missed changes, `only` for the resuming
   * subscriber), to every local subscriber allowed to see them, in feed order. Live changes wait in
   * their read group's queue while that group's previous batch is being re-read, and go together
   * in its next batch: at a low rate each change is re-read at once; when re-reads take longer
   * than changes take to arrive, batches grow instead of re-reads piling up (one in flight per
   * group). Each group's subscribers are handed their results in feed order (a chain per group);
   * only a subscriber the change matches gets anything queued. A resume's dispatch resolves when
   * every result is queued.
   */
  dispatch(batch: readonly FeedChange[], only?: ActiveSubscription): Promise<void> {
    const queued: Array<Promise<void>> = [];
    for (const [key, changes] of byCollectionOf(batch)) {
      if (only) {
        const group = new SubscriberGroup(only.readKey);
        group.add(only);
        const next = this.dispatchToGroup(
          group,
          changes.map((fc) => ({ fc, registeredBy: this.additions })),
          only,
        );
        if (next) queued.push(next);
        continue;
      }
      const groups = this.byCollection.get(key)?.byRead.values();
      if (groups) for (const group of groups) this.enqueue(group, changes);
    }
    return queued.length === 0 ? Promise.resolve() : Promise.all(queued).then(() => undefined);
  }

  /** Queues live changes for a group; starts its next batch unless one is being re-read. */
  private enqueue(group: SubscriberGroup, changes: readonly FeedChange[]): void {
    for (const fc of changes) if (group.wants(fc.change)) group.pending.push({ fc, registeredBy: this.additions });
    if (group.pumping || group.pending.length === 0) return;
    group.pumping = true;
    const run = (): void => {
      const batch = group.pending.splice(0);
      const done = this.dispatchToGroup(group, batch, undefined) ?? Promise.resolve();
      void done.then(() => {
        if (group.pending.length > 0 && group.size > 0) run();
        else {
          group.pending.length = 0;
          group.pumping = false;
        }
      });
    };
    run();
  }

  /** One read group's share of a collection's changes: batched re-reads, then delivery in order after its previous batch. */
  private dispatchToGroup(group: SubscriberGroup, all: readonly PendingChange[], only: ActiveSubscription | undefined): Promise<void> | undefined {
    const changes = all.filter((p) => group.wants(p.fc.change));
    const viewers = changes.length > 0 ? group.viewers() : [];
    if (viewers.length === 0) return undefined;
    // `{}`: the group reads without identity headers, as a change's `shared` state was read.
    const seen = seeAll(
      this.o,
      changes.map((p) => p.fc.change),
      viewers,
      group.readKey === '{}',
    );
    const key = group.readKey;
    const prior = this.chains.get(key);
    const next = (prior ? prior.then(() => seen) : seen).then((views) => {
      changes.forEach(({ fc, registeredBy }, i) => {
        // Subscribers of one identity with the same operation share one execution per change.
        let built: Map<string, Promise<ExecutionResult>> | undefined;
        // Each distinct view once (identities reading the same request see the same object); a
        // candidate is served with the view of its own identity only.
        const done = new Set<unknown>();
        for (const viewer of viewers) {
          const view = views.get(viewer.key)?.[i];
          if (view === null || view === undefined || done.has(view)) continue;
          done.add(view);
          for (const sub of group.candidates(view)) {
            if (views.get(sub.identityKey)?.[i] !== view || !sub.stream.open || !sub.on.has(fc.change.op) || (this.addedAt.get(sub) ?? 0) > registeredBy) continue;
            const value = valueFor(fc.change, sub, view);
            if (value === null) continue;
            this.o.counted('delivered');
            built ??= new Map();
            const buildKey = `${sub.identityKey}\u0000${sub.buildKey}`;
            let result = built.get(buildKey);
            if (!result) built.set(buildKey, (result = sub.build(value)));
            if (only) sub.stream.pushMissed(fc.position, result);
            else sub.stream.push(fc.position, result);
          }
        }
      });
    });
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
    return next;
  }

  /** Every second: ends subscriptions whose key, permission or app no longer allows them. */
  private async recheck(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const sub of [...this.all]) {
        if (!sub.stream.open) continue;
        try {
          const reason = await sub.check();
          if (reason) sub.stream.end(reason);
        } catch (error) {
          this.o.onError(error, 'checking a subscription');
        }
      }
    } finally {
      this.checking = false;
    }
  }

  /** Shutdown: no new subscriptions; every open one is handed to `end` (the transports send their reconnect hint). */
  closeAll(end: (sub: ActiveSubscription) => void): void {
    this.closing = true;
    clearInterval(this.timer);
    for (const sub of [...this.all]) end(sub);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** One subscriber's value of a change, given what its identity may see; null when it gets nothing. */
function valueFor(change: Change, sub: ActiveSubscription, seen: unknown): ChangeValue | null {
  if (seen === null) return null;
  const id = idText(change._id);
  if (seen === DELETE_SEEN) return sub.onlyId && sub.matches({ _id: change._id }) ? { op: 'delete', _id: change._id, id, document: null } : null;
  return sub.matches(seen) ? { op: change.op, _id: change._id, id, document: seen } : null;
}

/** One collection's groups, by the backend headers they read with and by the identities in them. */
interface CollectionGroups {
  readonly byRead: Map<string, SubscriberGroup>;
  readonly byIdentity: Map<string, SubscriberGroup>;
}

/** A batch's changes per collection, each list in feed order. */
function byCollectionOf(batch: readonly FeedChange[]): Map<string, FeedChange[]> {
  const out = new Map<string, FeedChange[]>();
  for (const fc of batch) {
    const key = collectionKey(fc.change.db, fc.change.collection);
    const list = out.get(key);
    if (list) list.push(fc);
    else out.set(key, [fc]);
  }
  return out;
}

function collectionKey(db: string, collection: string): string {
  return `${db}\u0000${collection}`;
}

function idText(id: unknown): string | null {
  if (typeof id === 'string') return id;
  if (typeof id === 'number') return String(id);
  if (id && typeof id === 'object' && typeof (id as { $oid?: unknown }).$oid === 'string') return (id as { $oid: string }).$oid;
  return id === undefined || id === null ? null : JSON.stringify(id);
}
