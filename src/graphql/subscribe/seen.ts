/**
 * What each identity may see of a batch of changes (SPEC §6.5, "who gets a change"): the state a
 * change carries (unprojected) under the identity's own readFilter and projectResponse, decided
 * here, or gated by the identity's own re-read where the backend may decide otherwise for it; for
 * a change without state, the document re-read by `_id` with that identity (its readFilter ANDed,
 * its projectResponse applied, the backend's ACL deciding on the identity's headers); for a delete
 * without document, whether its permission has no readFilter.
 *
 * Batched: the re-reads of one batch (the changes one read of the feed returned) are one read per
 * 100 distinct ids, `{_id: {$in: [...]}}`, instead of one per change; a batch of one id is the
 * read `{_id: X}` with `pagesize=1`. Documents are matched back to their changes by `_id` as
 * MongoDB compares it; an answer that lacks `_id`s is read again one id at a time, so a document
 * is never attributed by guesswork.
 *
 * Shared between identities only when the backend cannot tell them apart (the viewers handed in
 * together send the backend the same headers; hub.ts groups them so):
 * - without a read policy (`graphql.backend.auth: service`, or `acl.mode: own-routes`) every
 *   viewer's re-read is the same request, so one read serves them all;
 * - with one, each identity's decision is made as before, and identities whose readFilter is
 *   absent or only top-level equalities on strings or booleans (`{owner: "@user.id"}`, the common
 *   shape) share one read without the filter, which is then applied here: such an equality holds
 *   in memory exactly when MongoDB's holds (a string or boolean equals the field, or an element of
 *   an array field), so nothing is shown that the filtered read would not have returned. Any other
 *   readFilter is sent to the backend ANDed, one read per identity.
 */
import { readQueryString } from '../backend/http-reader.js';
import type { BackendRead, BackendReader, ReadDecision, ReadPolicy, RequestContext } from '../types.js';
import { isPlainObject } from '../../util/objects.js';
import { canonicalKey } from '../values/ejson.js';
import { compileMatcher, filterPaths } from '../values/local-match.js';
import { candidateValues, withinShape } from '../values/paths.js';
import type { Change } from './change.js';

/** What a delete without document shows to an identity whose permission has no readFilter. */
export const DELETE_SEEN = Symbol('delete seen');

/** Ids per batched re-read (the query string stays a few KiB; RESTHeart's pagesize allows 1,000). */
export const REREAD_BATCH = 100;

export interface SeenOptions {
  readonly reader: BackendReader;
  readonly readPolicy: ReadPolicy | undefined;
  readonly onError: (error: unknown, what: string) => void;
}

/** One identity among those handed in together: its key and the backend context of one of its subscribers. */
export interface Viewer {
  readonly key: string;
  readonly ctx: RequestContext;
}

type Found = Map<string, unknown>;
type Allowed = Extract<ReadDecision, { allow: true }>;

/**
 * For each viewer, for each change in order: the document it may see, `DELETE_SEEN`, or null.
 * The viewers must send the backend the same headers; `sharedReads`: those headers are none (the
 * backend shows them what it shows anyone reading without identity). Never rejects.
 *
 * A change that carries its state (change.ts) is decided on that state, unprojected, never on a
 * later one: read without identity (`shared`) and viewed by viewers reading without one, it is
 * decided here alone, the viewer's readFilter matched on it (local-match.ts, MongoDB's semantics)
 * and its projectResponse applied. Otherwise the backend might show this viewer more or less than
 * the capture read saw (its own ACL in jwt mode), so the viewer's own re-read by `_id` decides
 * whether it may read the document and which fields it is shown; what is delivered is still the
 * carried state, cut to those fields (`withinShape`). A readFilter the matcher cannot run is left
 * to the backend the same way. Changes without state are re-read as they always were.
 */
export async function seeAll(o: SeenOptions, changes: readonly Change[], viewers: readonly Viewer[], sharedReads = false): Promise<Map<string, unknown[]>> {
  const out = new Map<string, unknown[]>();
  if (viewers.length === 0 || changes.length === 0) return out;
  const { db, collection } = changes[0]!;
  // Without a read policy every viewer's re-read is the same request: one view serves them all.
  const distinct = o.readPolicy ? viewers : viewers.slice(0, 1);
  const views = distinct.map((v) => new IdentityView(o, db, collection, v.ctx));
  const rows = distinct.map(() => new Array<unknown>(changes.length).fill(null));
  const byKey = new Map<string, { id: unknown; at: number[] }>();
  const work: Array<Promise<void>> = [];
  changes.forEach((change, i) => {
    if (change.op === 'delete' && change.document === undefined) {
      views.forEach((view, v) =>
        work.push(
          guard(
            o,
            view.deleteSeen().then((seen) => void (rows[v]![i] = seen)),
            'deciding who may see a change',
          ),
        ),
      );
    } else if (change.op === 'delete') {
      const exact = change.shared === true && sharedReads;
      views.forEach((view, v) =>
        work.push(
          guard(
            o,
            view.carried(change.document, exact).then((doc) => void (rows[v]![i] = doc)),
            'deciding who may see a change',
          ),
        ),
      );
    } else {
      const key = canonicalKey(change._id);
      const entry = byKey.get(key);
      if (entry) entry.at.push(i);
      else byKey.set(key, { id: change._id, at: [i] });
    }
  });
  const entries = [...byKey.entries()];
  const batch: SeenBatch = { views, changes, rows, sharedReads };
  for (let start = 0; start < entries.length; start += REREAD_BATCH) {
    const chunk = entries.slice(start, start + REREAD_BATCH);
    const read = rereadOf(
      db,
      collection,
      chunk.map(([, e]) => e.id),
    );
    work.push(guard(o, seeChunk(o, batch, read, chunk), 're-reading a changed document for subscribers'));
  }
  await Promise.all(work);
  viewers.forEach((viewer, v) => out.set(viewer.key, rows[o.readPolicy ? v : 0]!));
  return out;
}

/** One batch being seen: its views (one per distinct viewer), its changes, the rows each view gets (per change), whether reads are shared. */
interface SeenBatch {
  readonly views: readonly IdentityView[];
  readonly changes: readonly Change[];
  readonly rows: unknown[][];
  readonly sharedReads: boolean;
}

/**
 * Per change, whether this identity could read the state its update carries from before the write
 * (`before`, SPEC §11.1): its readFilter matched on that state, as a delete's document is
 * (`carried`); false for a change without one. No backend read: the state is gone from the backend.
 * Never rejects.
 */
export async function seenBefore(o: SeenOptions, changes: readonly Change[], ctx: RequestContext, sharedReads: boolean): Promise<boolean[]> {
  const first = changes[0];
  if (!first) return [];
  const view = new IdentityView(o, first.db, first.collection, ctx);
  return Promise.all(
    changes.map((c) =>
      c.before === undefined
        ? false
        : view.carried(c.before, c.shared === true && sharedReads).then(
            (doc) => doc !== null && doc !== undefined,
            (error: unknown) => {
              o.onError(error, 'deciding who could read a document before its change');
              return false;
            },
          ),
    ),
  );
}

/** One chunk's inserts and updates for every view: decided on their carried state where it can be, re-read where not. */
async function seeChunk(o: SeenOptions, batch: SeenBatch, read: ReturnType<typeof rereadOf>, chunk: ReadonlyArray<[string, { id: unknown; at: number[] }]>): Promise<void> {
  const { views, changes, rows, sharedReads } = batch;
  // The ACL is asked with the query string the re-read of this chunk carries (or would carry).
  const decisions = await Promise.all(views.map((view) => view.decide(read)));
  /** Per view, what its re-read decides: carried states cut to what it shows (`gated`), or the document it shows (`current`). */
  const needs = views.map(() => ({ gated: [] as number[], current: [] as number[] }));
  decisions.forEach((decision, v) => {
    if (!decision.allow) return; // its rows stay null
    const filter = decision.filter && Object.keys(decision.filter).length > 0 ? decision.filter : undefined;
    const matches = filter ? compileMatcher(filter) : () => true;
    for (const [, e] of chunk) {
      for (const i of e.at) {
        const change = changes[i]!;
        if (change.document === undefined) needs[v]!.current.push(i);
        else if (matches && !matches(change.document))
          continue; // its state is not this viewer's to read
        else if (matches && change.shared === true && sharedReads) rows[v]![i] = decision.project ? decision.project(change.document) : change.document;
        else needs[v]!.gated.push(i);
      }
    }
  });
  if (needs.every((n) => n.gated.length === 0 && n.current.length === 0)) return;
  const found = await rereadFor(o, views, read, decisions);
  found.forEach((f, v) => {
    const decision = decisions[v]!;
    if (!decision.allow) return;
    const keyOf = (i: number) => canonicalKey(changes[i]!._id);
    for (const i of needs[v]!.current) rows[v]![i] = f.get(keyOf(i)) ?? null;
    for (const i of needs[v]!.gated) {
      const shown = f.get(keyOf(i));
      if (shown === undefined || shown === null) continue;
      const doc = changes[i]!.document;
      rows[v]![i] = withinShape(decision.project ? decision.project(doc) : doc, shown) ?? null;
    }
  });
}

function guard(o: SeenOptions, p: Promise<void>, what: string): Promise<void> {
  return p.catch((error: unknown) => o.onError(error, what));
}

function rereadOf(db: string, collection: string, ids: readonly unknown[]): BackendRead & { readonly ids: readonly unknown[] } {
  const byId = ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } };
  return { db, collection, filter: byId, page: 1, pagesize: ids.length, ids };
}

/** One chunk's re-read for every view (the decisions made for it): shared where the filter can be applied here, one read per identity otherwise. */
async function rereadFor(o: SeenOptions, views: readonly IdentityView[], read: ReturnType<typeof rereadOf>, decisions: readonly ReadDecision[]): Promise<Found[]> {
  const found: Found[] = views.map(() => new Map());
  const own: Array<Promise<void>> = [];
  const ownRead = (v: number) => views[v]!.reread(read, decisions[v] as Allowed).then((f) => void (found[v] = f));
  // The viewers whose readFilter is applied here, each with its matcher.
  const sharing = new Map<number, (doc: unknown) => boolean>();
  decisions.forEach((decision, v) => {
    const matches = decision.allow ? inMemoryFilter(decision.filter) : undefined;
    if (matches) sharing.set(v, matches);
  });
  // One identity alone reads as it always did (its filter sent to the backend).
  if (sharing.size < 2) sharing.clear();
  decisions.forEach((decision, v) => {
    if (decision.allow && !sharing.has(v)) own.push(ownRead(v));
  });
  if (sharing.size > 0) {
    const [first] = sharing.keys();
    own.push(
      views[first!]!.reread(read, { allow: true }).then(
        (raw) => {
          for (const [v, matches] of sharing) {
            const { project } = decisions[v] as Allowed;
            for (const [key, doc] of raw) if (matches(doc)) found[v]!.set(key, project ? project(doc) : doc);
          }
        },
        // The unfiltered read failed (a backend rule refusing it?): each identity reads as it would alone.
        () => Promise.all([...sharing.keys()].map(ownRead)).then(() => undefined),
      ),
    );
  }
  await Promise.all(own);
  return found;
}

/**
 * A readFilter this process applies exactly as MongoDB would: none, or top-level equalities on
 * strings or booleans (not `_id`, no dotted path, no operator). Undefined for anything else.
 */
export function inMemoryFilter(filter: Record<string, unknown> | undefined): ((doc: unknown) => boolean) | undefined {
  if (!filter) return () => true;
  const entries = Object.entries(filter);
  for (const [key, value] of entries) {
    if (key.startsWith('$') || key.includes('.') || key === '_id') return undefined;
    if (typeof value !== 'string' && typeof value !== 'boolean') return undefined;
  }
  return (doc) => {
    if (!isPlainObject(doc)) return false;
    for (const [key, value] of entries) {
      const field = doc[key];
      if (field === value) continue;
      if (Array.isArray(field) && field.includes(value)) continue;
      return false;
    }
    return true;
  };
}

/** One identity's reads and decisions for one batch; its decision without a query made once. */
class IdentityView {
  private decided: Promise<ReadDecision> | undefined;

  constructor(
    private readonly o: SeenOptions,
    private readonly db: string,
    private readonly collection: string,
    private readonly ctx: RequestContext,
  ) {}

  private decision(): Promise<ReadDecision> {
    const { db, collection } = this;
    return (this.decided ??= this.o.readPolicy ? Promise.resolve(this.o.readPolicy({ db, collection, query: '' }, this.ctx)) : Promise.resolve({ allow: true }));
  }

  /** The decision for one re-read (the ACL sees its query string, as for a query's read). */
  async decide(read: BackendRead): Promise<ReadDecision> {
    if (!this.o.readPolicy) return { allow: true };
    return this.o.readPolicy({ db: read.db, collection: read.collection, query: readQueryString(read) }, this.ctx);
  }

  /** A delete without document: seen when the permission shows the collection without readFilter. */
  async deleteSeen(): Promise<unknown> {
    const d = await this.decision();
    return d.allow && !d.filter ? DELETE_SEEN : null;
  }

  /** The documents of the read's ids as this decision lets the identity see them (readFilter ANDed, projected), by canonical `_id`. */
  async reread(read: ReturnType<typeof rereadOf>, decision: Allowed): Promise<Found> {
    const found: Found = new Map();
    const { ids } = read;
    const byId = read.filter;
    const filter = decision.filter && Object.keys(decision.filter).length > 0 ? { $and: [byId, decision.filter] } : byId;
    const docs = await this.o.reader.find({ db: read.db, collection: read.collection, filter, page: read.page, pagesize: read.pagesize }, this.ctx);
    const project = (doc: unknown) => (decision.project ? decision.project(doc) : doc);
    if (ids.length === 1) {
      const doc = docs[0];
      if (doc !== undefined && doc !== null) found.set(canonicalKey(ids[0]), project(doc));
      return found;
    }
    if (docs.some((doc) => !isPlainObject(doc) || doc._id === undefined)) {
      // Not attributable by `_id` (the backend hid it): one read per id, as without batching.
      const singles = await Promise.all(ids.map((id) => this.reread(rereadOf(read.db, read.collection, [id]), decision)));
      for (const single of singles) for (const [k, v] of single) found.set(k, v);
      return found;
    }
    for (const doc of docs) found.set(canonicalKey((doc as Record<string, unknown>)._id), project(doc));
    return found;
  }

  /**
   * A state from before a write (a delete's document, an update's `before`; unprojected): the
   * readFilter matched here, projectResponse applied; there is nothing left to re-read. Unless
   * `exact` (read without identity, by viewers without one), the document may lack fields the
   * backend hid from the writer, so a readFilter naming a field it lacks is not guessed at (a
   * negative filter would match the absence).
   */
  async carried(doc: unknown, exact: boolean): Promise<unknown> {
    const decision = await this.decision();
    if (!decision.allow) return null;
    if (decision.filter && Object.keys(decision.filter).length > 0) {
      const matcher = compileMatcher(decision.filter);
      if (!matcher || !matcher(doc)) return null; // a filter the matcher cannot run is not guessed at
      if (!exact && filterPaths(decision.filter).some((path) => candidateValues(doc, path).length === 0)) return null;
    }
    return decision.project ? decision.project(doc) : doc;
  }
}
