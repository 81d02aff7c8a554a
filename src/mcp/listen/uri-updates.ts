/**
 * Per-URI change notifications (SPEC §11.1): a listener names resource URIs (2026-07-28's
 * `resourceSubscriptions`, 2025-11-25's `resources/subscribe`) and is sent
 * `notifications/resources/updated {uri}` for each write Outrigger sees (the same changes as
 * §6.5's subscriptions) of a document it names, or of any document of a collection it names, that
 * it may read before or after the change. Never content, never coalesced.
 *
 * The change feed is GraphQL subscriptions' (graphql/subscribe/watch.ts): each watched collection
 * is claimed as a subscriber claims it (so a write on any replica answered after the listener's
 * acknowledgement reaches it), and "may read it after" is the subscriber's own decision (seen.ts:
 * the listener's readFilter on the change's unprojected state, its own re-read where the backend
 * may decide otherwise), made again for each change under the listener's current permissions.
 * "Could read it before": the listener's readFilter on the state the change carries from before
 * its write (`before`, or a delete's document: read before the write was sent, issue 51), or what
 * the decision said at the listener's previous change of the same document (a document URI is
 * decided once when it is watched); without either (the read failed), a document a collection
 * listener has not seen change counts as not readable before (docs/agents.md). A permission change forgets
 * what was known and decides document URIs again; a listener that may no longer `GET` the
 * collection (or whose `mcp.resources` no longer exposes it) is told nothing of it.
 */
import type { RequestScope } from '../../http/scope.js';
import type { Change, FeedChange } from '../../graphql/subscribe/change.js';
import type { ChangeWatch, FeedGap } from '../../graphql/subscribe/watch.js';
import { canonicalKey } from '../../graphql/values/ejson.js';
import { idFromSegment } from '../../graphql/writes/answers.js';
import { exposed, mayRead, type ResourceDoor } from '../resources.js';
import { collectionUri, parseResourceUri } from '../resource-uris.js';

/** URIs one listen (or one 2025 subscribe stream) may name. */
export const MAX_URIS_PER_LISTENER = 100;
/** Documents whose last decision one listener remembers (the oldest is forgotten first). */
const MAX_KNOWN = 10_000;

export interface WatchedUri {
  readonly uri: string;
  readonly db: string;
  readonly collection: string;
  /** The collection's REST path (what the ACL and `mcp.resources` decide on). */
  readonly path: string;
  /** The document's `_id` as changes carry it, or null for a collection URI. */
  readonly id: unknown;
  readonly idKey: string | null;
}

interface Watcher {
  readonly scope: RequestScope;
  /** Listeners of one identity share one decision per read of the feed (as subscribers of one identity do) and one order. */
  readonly identity: string;
  readonly uris: readonly WatchedUri[];
  readonly send: (uri: string) => void;
  /** Per document (`knownKey`: its collection and the `canonicalKey` of its `_id`), whether this listener could read it at its last change. */
  readonly known: Map<string, boolean>;
  open: boolean;
}

export class UriUpdates {
  private readonly byCollection = new Map<string, Set<Watcher>>();
  /** Per identity, its last decision under way: the next queues after it, so each listener is told in the feed's order. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly watch: ChangeWatch,
    private readonly door: ResourceDoor,
    private readonly onError: (error: unknown, what: string) => void,
  ) {
    watch.onChanges((changes) => this.changed(changes));
    watch.onGap((gap) => this.lost(gap));
  }

  /** A URI a listener names, or why it is refused (naming it): not a resource URI, a query, not exposed, or a collection the caller may not `GET`. */
  check(scope: RequestScope, uri: unknown): { ok: true; watched: WatchedUri } | { ok: false; problem: string } {
    if (typeof uri !== 'string') return { ok: false, problem: `a resource subscription must be a URI string, not ${JSON.stringify(uri)?.slice(0, 100) ?? 'nothing'}` };
    const parsed = parseResourceUri(uri, this.door.collectionPath);
    if (!parsed.ok) return { ok: false, problem: parsed.problem };
    const { target } = parsed;
    if (target.id === null && target.restPath !== target.pathOnly)
      return { ok: false, problem: `the resource ${JSON.stringify(uri)} is a query; subscribe to its collection (${collectionUri(target.db, target.collection)}) or to a document` };
    const path = parseResourceUri(collectionUri(target.db, target.collection), this.door.collectionPath);
    const collectionPath = path.ok ? path.target.pathOnly : target.pathOnly;
    if (!exposed(this.door, scope, target.pathOnly)) return { ok: false, problem: `${target.uri} is not a resource of this service (mcp.resources does not expose ${target.pathOnly})` };
    if (!mayRead(this.door, scope, collectionPath)) return { ok: false, problem: `${target.uri} may not be read by you (GET ${collectionPath} is not allowed)` };
    // `?id_type=NUMBER` names the number (resource-uris.ts): the _id changes carry, as the REST path's.
    const id = target.id === null ? null : idFromSegment(target.id, target.idType);
    return { ok: true, watched: { uri: target.uri, db: target.db, collection: target.collection, path: collectionPath, id, idKey: id === null ? null : canonicalKey(id) } };
  }

  /**
   * Starts telling `send` of the URIs' changes: each collection claimed in Redis and each
   * document URI decided before this resolves (then a write answered afterwards is told). Returns
   * the stop. Throws (nothing left claimed) when Redis cannot take a claim.
   */
  async add(scope: RequestScope, uris: readonly WatchedUri[], send: (uri: string) => void): Promise<() => void> {
    const watcher: Watcher = { scope, identity: identityOf(scope), uris, send, known: new Map(), open: true };
    const collections = [...new Map(uris.map((u) => [collectionKey(u.db, u.collection), u])).entries()];
    // A collection URI wants each write's state before it (issue 51); a document URI was decided when watched.
    const also = (u: WatchedUri) => (uris.some((w) => w.idKey === null && w.db === u.db && w.collection === u.collection) ? ('before' as const) : undefined);
    const claimed: WatchedUri[] = [];
    try {
      for (const [, u] of collections) {
        await this.watch.claim(u.db, u.collection, also(u));
        claimed.push(u);
      }
    } catch (error) {
      for (const u of claimed) this.watch.release(u.db, u.collection, also(u));
      throw error;
    }
    for (const [key] of collections) {
      let set = this.byCollection.get(key);
      if (!set) this.byCollection.set(key, (set = new Set()));
      set.add(watcher);
    }
    await this.seed(watcher);
    return () => {
      if (!watcher.open) return;
      watcher.open = false;
      for (const [key, u] of collections) {
        const set = this.byCollection.get(key);
        set?.delete(watcher);
        if (set?.size === 0) this.byCollection.delete(key);
        this.watch.release(u.db, u.collection, also(u));
      }
    };
  }

  /** The permissions changed: what each listener could read is decided again from now on. */
  accessChanged(): void {
    const all = new Set<Watcher>();
    for (const set of this.byCollection.values()) for (const w of set) all.add(w);
    for (const w of all) {
      this.queue(w.identity, () => {
        w.known.clear();
        return this.seed(w);
      });
    }
  }

  private queue(identity: string, next: () => Promise<void>): void {
    const done = (this.chains.get(identity) ?? Promise.resolve()).then(next).catch((error: unknown) => this.onError(error, 'telling a listener of changed resources'));
    this.chains.set(identity, done);
    void done.then(() => {
      if (this.chains.get(identity) === done) this.chains.delete(identity);
    });
  }

  /** Whether each watched document (of `only`'s collections, else all) is readable by the listener now (its "before" at its next change). */
  private async seed(w: Watcher, only?: (u: WatchedUri) => boolean): Promise<void> {
    const docs = w.uris.filter((u) => u.idKey !== null && (only?.(u) ?? true));
    for (const u of docs) {
      try {
        const [seen] = await this.watch.see([{ db: u.db, collection: u.collection, op: 'update', _id: u.id }], this.watch.contextOf(w.scope));
        remember(w.known, knownKey(u.db, u.collection, u.idKey!), seen !== null && seen !== undefined);
      } catch (error) {
        this.onError(error, `deciding whether a listener may read ${u.uri}`);
      }
    }
  }

  /**
   * Changes the feed lost (GraphQL subscribers get CHANGES_LOST): every listener watching an
   * affected collection (`null`: any) is told `updated` for each URI of it it watches and may still
   * read, so the agent reads them again, the one thing a notification can ask (MCP has no error
   * notification on a listen stream, and ending the stream would lose the listen). What it
   * remembered of those documents is forgotten and its document URIs decided again. Queued behind
   * the changes before the gap, so the order is the feed's.
   */
  private lost(gap: FeedGap): void {
    const hit = (u: { db: string; collection: string }) => (gap.db === null || u.db === gap.db) && (gap.collection === null || u.collection === gap.collection);
    const byIdentity = new Map<string, Set<Watcher>>();
    for (const set of this.byCollection.values()) {
      for (const w of set) {
        if (!w.uris.some(hit)) continue;
        const list = byIdentity.get(w.identity);
        if (list) list.add(w);
        else byIdentity.set(w.identity, new Set([w]));
      }
    }
    for (const [identity, watchers] of byIdentity) {
      this.queue(identity, async () => {
        for (const w of watchers) {
          if (!w.open) continue;
          const told = w.uris.filter((u) => hit(u) && exposed(this.door, w.scope, u.path) && mayRead(this.door, w.scope, u.path));
          for (const key of [...w.known.keys()]) if (told.some((u) => key.startsWith(knownKey(u.db, u.collection, '')))) w.known.delete(key);
          for (const uri of new Set(told.map((u) => u.uri))) w.send(uri);
          await this.seed(w, (u) => told.includes(u));
        }
      });
    }
  }

  private changed(batch: readonly FeedChange[]): void {
    const perCollection = new Map<string, Change[]>();
    for (const { change } of batch) {
      const key = collectionKey(change.db, change.collection);
      if (!this.byCollection.has(key)) continue;
      const list = perCollection.get(key);
      if (list) list.push(change);
      else perCollection.set(key, [change]);
    }
    for (const [key, changes] of perCollection) {
      const byIdentity = new Map<string, Watcher[]>();
      for (const w of this.byCollection.get(key) ?? []) {
        const list = byIdentity.get(w.identity);
        if (list) list.push(w);
        else byIdentity.set(w.identity, [w]);
      }
      for (const [identity, watchers] of byIdentity) this.queue(identity, () => this.decide(watchers, changes));
    }
  }

  /** One identity's listeners' share of a collection's changes: one decision, then each told of those it may read before or after. */
  private async decide(watchers: readonly Watcher[], changes: readonly Change[]): Promise<void> {
    const { db, collection } = changes[0]!;
    const wanted = new Map<Watcher, { whole: WatchedUri | undefined; docs: WatchedUri[]; at: number[] }>();
    const needed = new Set<number>();
    for (const w of watchers) {
      const mine = w.uris.filter((u) => u.db === db && u.collection === collection);
      const path = mine[0]?.path;
      if (!w.open || path === undefined || !exposed(this.door, w.scope, path) || !mayRead(this.door, w.scope, path)) continue;
      const whole = mine.find((u) => u.idKey === null);
      const docs = mine.filter((u) => u.idKey !== null);
      const at = changes.flatMap((c, i) => (whole || docs.some((u) => u.idKey === canonicalKey(c._id)) ? [i] : []));
      if (at.length === 0) continue;
      wanted.set(w, { whole, docs, at });
      for (const i of at) needed.add(i);
    }
    if (wanted.size === 0) return;
    const order = [...needed].sort((x, y) => x - y);
    const first = wanted.keys().next().value!;
    const seen = await this.watch.see(
      order.map((i) => changes[i]!),
      this.watch.contextOf(first.scope),
    );
    const afterOf = new Map(order.map((i, k) => [i, seen[k] !== null && seen[k] !== undefined]));
    // An update that carries its state before (SPEC §11.1): could this identity read that state? Decided only where after says no.
    const beforeAt = order.filter((i) => !afterOf.get(i) && changes[i]!.before !== undefined);
    const couldBefore =
      beforeAt.length === 0
        ? []
        : await this.watch.seeBefore(
            beforeAt.map((i) => changes[i]!),
            this.watch.contextOf(first.scope),
          );
    const beforeOf = new Map(beforeAt.map((i, k) => [i, couldBefore[k] === true]));
    for (const [w, { whole, docs, at }] of wanted) {
      for (const i of at) {
        const idKey = canonicalKey(changes[i]!._id);
        const after = afterOf.get(i) === true;
        const key = knownKey(db, collection, idKey);
        // Told when it could read the state before this write (carried), or at its own last change of the document.
        const before = beforeOf.get(i) === true || (w.known.get(key) ?? false);
        // A deleted document is readable by nobody from now on (an insert of its `_id` later is another document's first state).
        remember(w.known, key, after && changes[i]!.op !== 'delete');
        if (!(before || after) || !w.open) continue;
        if (whole) w.send(whole.uri);
        for (const u of docs) if (u.idKey === idKey) w.send(u.uri);
      }
    }
  }
}

/** Who a listener reads as, as a subscriber's identity (its backend headers only where Outrigger did not verify the caller). */
function identityOf(scope: RequestScope): string {
  const p = scope.principal;
  return JSON.stringify([p.id, p.roles, p.via, p.keyId ?? null, p.verifiedLocally ? null : (scope.req.headers.authorization ?? null), p.id === null ? scope.clientIp : null]);
}

function remember(known: Map<string, boolean>, key: string, value: boolean): void {
  known.delete(key);
  known.set(key, value);
  if (known.size > MAX_KNOWN) known.delete(known.keys().next().value!);
}

/** What a listener remembers a document by: its collection and its `_id` (two collections may hold the same `_id`). */
function knownKey(db: string, collection: string, idKey: string): string {
  return `${collectionKey(db, collection)}\u0000${idKey}`;
}

function collectionKey(db: string, collection: string): string {
  return `${db}\u0000${collection}`;
}
