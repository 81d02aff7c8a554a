/**
 * The subscriptions of one replica (SPEC §6.5): registered under their collection, bounded per
 * principal and per process, and fed every change of the feed in order. For each change, the
 * subscribers whose `on` holds its op are grouped by identity: one re-read of the document by
 * `_id` serves every subscriber of the same identity (its readFilter, projectResponse and the
 * backend's ACL decide, reads/ and backend/ as for a query), then each subscriber's find is
 * matched on what that identity may see and its selection is executed on the change.
 *
 * Deletes carry no document: `{op: "delete", _id}` reaches only subscribers whose find binds
 * nothing but `_id` and whose read permission has no readFilter. A GraphQL delete carries the
 * document it read first; it is matched against the readFilter and the find (no re-read), with
 * projectResponse applied.
 *
 * Every second each subscription is checked again (its credentials, the ACL, its app): a revoked
 * key, a lost permission or a changed app ends it with an error naming why.
 */
import type { ExecutionResult } from 'graphql';
import { compileMatcher } from '../values/local-match.js';
import { readQueryString } from '../backend/http-reader.js';
import type { BackendReader, ReadDecision, ReadPolicy, RequestContext } from '../types.js';
import type { ChangeOp } from '../document/subscriptions.js';
import type { Change, FeedChange } from './change.js';
import type { ChangeFeed } from './feed.js';
import type { EndReason, SubscriptionStream, Transport } from './subscription.js';

export interface ActiveSubscription {
  readonly stream: SubscriptionStream;
  readonly db: string;
  readonly collection: string;
  readonly on: ReadonlySet<ChangeOp>;
  /** The field's find with the subscriber's arguments and `@user.*`, on a document the identity may see. */
  readonly matches: (doc: unknown) => boolean;
  /** The find binds nothing but `_id`: the only subscribers a delete without document may reach. */
  readonly onlyId: boolean;
  /** Who the re-read is made as (headers and permission): equal keys share one re-read. */
  readonly identityKey: string;
  /** Whose limit it counts against (`maxPerPrincipal`). */
  readonly principalKey: string;
  readonly transport: Transport;
  readonly ctx: RequestContext;
  /** The subscriber's selection executed on one change value. */
  build(value: ChangeValue): Promise<ExecutionResult>;
  /** Equal for subscribers whose `build` gives the same result for the same identity (app version, query, variables). */
  readonly buildKey: string;
  /** Is it still allowed (credentials, the ACL, the app)? The reason to end it, or null. */
  check(): Promise<EndReason | null> | EndReason | null;
}

/** What a subscription field resolves from: the change (`id` is `_id` as a string, for an `ID` field). */
export interface ChangeValue {
  readonly op: ChangeOp;
  readonly _id: unknown;
  readonly id: string | null;
  readonly document: unknown;
}

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
  private readonly byCollection = new Map<string, Set<ActiveSubscription>>();
  private readonly perPrincipal = new Map<string, number>();
  private readonly all = new Set<ActiveSubscription>();
  private readonly timer: NodeJS.Timeout;
  private checking = false;
  private closing = false;
  /** Per identity, the last change whose results are being queued: the next one queues after it. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly o: HubOptions) {
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
  }

  count(transport?: Transport): number {
    if (!transport) return this.all.size;
    let n = 0;
    for (const s of this.all) if (s.transport === transport) n++;
    return n;
  }

  /** Room for one more subscription of this principal? The error naming the bound, or null. */
  refusal(principalKey: string): EndReason | null {
    if (this.closing) return { message: 'this replica is shutting down; reconnect', code: 'SHUTTING_DOWN' };
    if (this.all.size >= this.o.maxPerProcess) return { message: `this replica holds its most subscriptions (subscriptions.maxPerProcess: ${this.o.maxPerProcess}); retry later or elsewhere`, code: 'TOO_MANY_SUBSCRIPTIONS' };
    if ((this.perPrincipal.get(principalKey) ?? 0) >= this.o.maxPerPrincipal) {
      return { message: `you hold the most subscriptions one caller may hold (subscriptions.maxPerPrincipal: ${this.o.maxPerPrincipal}); end one first`, code: 'TOO_MANY_SUBSCRIPTIONS' };
    }
    return null;
  }

  /** Registers a subscription (its collection claimed across replicas first); null when a bound refuses it. */
  async add(sub: ActiveSubscription): Promise<EndReason | null> {
    const refused = this.refusal(sub.principalKey);
    if (refused) return refused;
    this.perPrincipal.set(sub.principalKey, (this.perPrincipal.get(sub.principalKey) ?? 0) + 1);
    this.all.add(sub);
    const key = collectionKey(sub.db, sub.collection);
    let set = this.byCollection.get(key);
    if (!set) this.byCollection.set(key, (set = new Set()));
    set.add(sub);
    await this.o.feed.claim(sub.db, sub.collection);
    return null;
  }

  remove(sub: ActiveSubscription, reason: EndReason | null): void {
    if (!this.all.delete(sub)) return;
    const n = (this.perPrincipal.get(sub.principalKey) ?? 1) - 1;
    if (n <= 0) this.perPrincipal.delete(sub.principalKey);
    else this.perPrincipal.set(sub.principalKey, n);
    const key = collectionKey(sub.db, sub.collection);
    const set = this.byCollection.get(key);
    set?.delete(sub);
    if (set && set.size === 0) this.byCollection.delete(key);
    this.o.feed.release(sub.db, sub.collection);
    if (reason?.code === 'SLOW_SUBSCRIBER') this.o.counted('dropped');
  }

  /**
   * One change from the feed, to every local subscriber allowed to see it, in feed order. The
   * re-read starts at once (re-reads of successive changes overlap), and each identity's
   * subscribers are handed their results in feed order (a chain per identity); only a subscriber
   * the change matches gets anything queued, so a change costs nothing per non-matching subscriber
   * but one `matches` call. Resolves when every result is queued (a resume waits for it).
   */
  dispatch(fc: FeedChange, only?: ActiveSubscription): Promise<void> {
    const { change } = fc;
    const subs = only ? [only] : this.byCollection.get(collectionKey(change.db, change.collection));
    if (!subs) return Promise.resolve();
    let groups: Map<string, ActiveSubscription[]> | undefined;
    for (const sub of subs) {
      if (!sub.on.has(change.op) || !sub.stream.open) continue;
      if (change.op === 'delete' && change.document === undefined && !sub.onlyId) continue;
      groups ??= new Map();
      const members = groups.get(sub.identityKey);
      if (members) members.push(sub);
      else groups.set(sub.identityKey, [sub]);
    }
    if (!groups) return Promise.resolve();
    const queued: Array<Promise<void>> = [];
    for (const [key, members] of groups) {
      const identity = new Identity(this.o, change, members[0]!.ctx);
      const seen = this.seenBy(identity);
      const prior = this.chains.get(key);
      const next = (prior ? prior.then(() => seen) : seen).then((doc) => {
        // Subscribers of one identity with the same operation share one execution per change.
        const built = new Map<string, Promise<ExecutionResult>>();
        for (const sub of members) {
          const value = valueFor(change, sub, doc);
          if (value === null) continue;
          this.o.counted('delivered');
          let result = built.get(sub.buildKey);
          if (!result) built.set(sub.buildKey, (result = sub.build(value)));
          if (only) sub.stream.pushMissed(fc.position, result);
          else sub.stream.push(fc.position, result);
        }
      });
      this.chains.set(key, next);
      void next.finally(() => {
        if (this.chains.get(key) === next) this.chains.delete(key);
      });
      queued.push(next);
    }
    return Promise.all(queued).then(() => undefined);
  }

  /**
   * What one identity may see of a change: the document (re-read, or the one a GraphQL delete
   * carries, readFilter matched and projected), `DELETE_SEEN` for a delete its permission shows
   * (no readFilter), or null.
   */
  private async seenBy(identity: Identity): Promise<unknown> {
    const change = identity.change;
    try {
      if (change.op === 'delete' && change.document === undefined) {
        const decision = await identity.decision();
        return decision.allow && !decision.filter ? DELETE_SEEN : null;
      }
      return change.document !== undefined ? await identity.presented(change.document) : await identity.reread();
    } catch (error) {
      this.o.onError(error, 'deciding who may see a change');
      return null;
    }
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

/** One identity's view of one change: its read decision and its re-read, each made once. */
class Identity {
  private decided: Promise<ReadDecision> | undefined;
  private read: Promise<unknown> | undefined;

  constructor(
    private readonly o: HubOptions,
    readonly change: Change,
    private readonly ctx: RequestContext,
  ) {}

  decision(): Promise<ReadDecision> {
    const { db, collection } = this.change;
    return (this.decided ??= this.o.readPolicy ? Promise.resolve(this.o.readPolicy({ db, collection, query: '' }, this.ctx)) : Promise.resolve({ allow: true }));
  }

  /** The document by `_id` as this identity may read it now (readFilter ANDed, projected), or null. */
  reread(): Promise<unknown> {
    return (this.read ??= this.doReread().catch((error: unknown) => {
      this.o.onError(error, 're-reading a changed document for subscribers');
      return null;
    }));
  }

  private async doReread(): Promise<unknown> {
    const { db, collection } = this.change;
    const byId = { _id: this.change._id };
    const read = { db, collection, filter: byId, page: 1, pagesize: 1 };
    let decision: ReadDecision = { allow: true };
    if (this.o.readPolicy) decision = await this.o.readPolicy({ db, collection, query: readQueryString(read) }, this.ctx);
    if (!decision.allow) return null;
    const filter = decision.filter && Object.keys(decision.filter).length > 0 ? { $and: [byId, decision.filter] } : byId;
    const docs = await this.o.reader.find({ ...read, filter }, this.ctx);
    const doc = docs[0];
    if (doc === undefined || doc === null) return null;
    return decision.project ? decision.project(doc) : doc;
  }

  /** A document the change carries (a GraphQL delete's): the readFilter matched here, projectResponse applied. */
  async presented(doc: unknown): Promise<unknown> {
    const decision = await this.decision();
    if (!decision.allow) return null;
    if (decision.filter && Object.keys(decision.filter).length > 0) {
      const matcher = compileMatcher(decision.filter);
      if (!matcher || !matcher(doc)) return null; // a filter the matcher cannot run is not guessed at
    }
    return decision.project ? decision.project(doc) : doc;
  }
}

/** What a delete without document shows to an identity whose permission has no readFilter. */
const DELETE_SEEN = Symbol('delete seen');

/** One subscriber's value of a change, given what its identity may see; null when it gets nothing. */
function valueFor(change: Change, sub: ActiveSubscription, seen: unknown): ChangeValue | null {
  if (seen === null) return null;
  const id = idText(change._id);
  if (seen === DELETE_SEEN) return sub.onlyId && sub.matches({ _id: change._id }) ? { op: 'delete', _id: change._id, id, document: null } : null;
  return sub.matches(seen) ? { op: change.op, _id: change._id, id, document: seen } : null;
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
