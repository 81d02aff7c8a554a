/**
 * What one identity may see of a batch of changes (SPEC §6.5, "who gets a change"): the documents
 * re-read by `_id` with that identity (its readFilter ANDed, its projectResponse applied, the
 * backend's ACL deciding on the identity's headers), a GraphQL delete's carried document matched
 * against the readFilter here, or, for a delete without document, whether its permission has no
 * readFilter. The re-reads of one batch (the changes one read of the feed returned) are one read
 * per 100 distinct ids, `{_id: {$in: [...]}}`, instead of one per change; a batch of one id is the
 * read `{_id: X}` with `pagesize=1`. Documents are matched back to their changes by `_id` as
 * MongoDB compares it; a batch whose answer lacks `_id`s is read again one id at a time, so a
 * document is never attributed by guesswork.
 */
import { readQueryString } from '../backend/http-reader.js';
import type { BackendReader, ReadDecision, ReadPolicy, RequestContext } from '../types.js';
import { isPlainObject } from '../app-document.js';
import { canonicalKey } from '../values/ejson.js';
import { compileMatcher } from '../values/local-match.js';
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

/** One identity's view of the changes of one batch of one collection: its read decision made once, its re-reads batched. */
export class IdentityView {
  private decided: Promise<ReadDecision> | undefined;

  constructor(
    private readonly o: SeenOptions,
    private readonly db: string,
    private readonly collection: string,
    private readonly ctx: RequestContext,
  ) {}

  /** For each change, in order: the document this identity may see, `DELETE_SEEN`, or null. Never rejects. */
  async seeAll(changes: readonly Change[]): Promise<unknown[]> {
    const out = new Array<unknown>(changes.length).fill(null);
    const byKey = new Map<string, { id: unknown; at: number[] }>();
    const work: Array<Promise<void>> = [];
    changes.forEach((change, i) => {
      if (change.op === 'delete' && change.document === undefined) {
        work.push(this.guard(this.decision().then((d) => void (out[i] = d.allow && !d.filter ? DELETE_SEEN : null)), 'deciding who may see a change'));
      } else if (change.document !== undefined) {
        work.push(this.guard(this.presented(change.document).then((doc) => void (out[i] = doc)), 'deciding who may see a change'));
      } else {
        const key = canonicalKey(change._id);
        const entry = byKey.get(key);
        if (entry) entry.at.push(i);
        else byKey.set(key, { id: change._id, at: [i] });
      }
    });
    const entries = [...byKey.entries()];
    for (let start = 0; start < entries.length; start += REREAD_BATCH) {
      const chunk = entries.slice(start, start + REREAD_BATCH);
      work.push(
        this.guard(
          this.reread(chunk.map(([, e]) => e.id)).then((found) => {
            for (const [key, e] of chunk) for (const i of e.at) out[i] = found.get(key) ?? null;
          }),
          're-reading a changed document for subscribers',
        ),
      );
    }
    await Promise.all(work);
    return out;
  }

  private guard(p: Promise<void>, what: string): Promise<void> {
    return p.catch((error: unknown) => this.o.onError(error, what));
  }

  private decision(): Promise<ReadDecision> {
    const { db, collection } = this;
    return (this.decided ??= this.o.readPolicy ? Promise.resolve(this.o.readPolicy({ db, collection, query: '' }, this.ctx)) : Promise.resolve({ allow: true }));
  }

  /** The documents of these ids as this identity may read them now (readFilter ANDed, projected), by canonical `_id`. */
  private async reread(ids: readonly unknown[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    const { db, collection } = this;
    const byId = ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } };
    const read = { db, collection, filter: byId, page: 1, pagesize: ids.length };
    let decision: ReadDecision = { allow: true };
    if (this.o.readPolicy) decision = await this.o.readPolicy({ db, collection, query: readQueryString(read) }, this.ctx);
    if (!decision.allow) return found;
    const filter = decision.filter && Object.keys(decision.filter).length > 0 ? { $and: [byId, decision.filter] } : byId;
    const docs = await this.o.reader.find({ ...read, filter }, this.ctx);
    const project = (doc: unknown) => (decision.project ? decision.project(doc) : doc);
    if (ids.length === 1) {
      const doc = docs[0];
      if (doc !== undefined && doc !== null) found.set(canonicalKey(ids[0]), project(doc));
      return found;
    }
    if (docs.some((doc) => !isPlainObject(doc) || doc._id === undefined)) {
      // Not attributable by `_id` (the backend hid it): one read per id, as without batching.
      const singles = await Promise.all(ids.map((id) => this.reread([id])));
      for (const single of singles) for (const [k, v] of single) found.set(k, v);
      return found;
    }
    for (const doc of docs) found.set(canonicalKey((doc as Record<string, unknown>)._id), project(doc));
    return found;
  }

  /** A document the change carries (a GraphQL delete's): the readFilter matched here, projectResponse applied. */
  private async presented(doc: unknown): Promise<unknown> {
    const decision = await this.decision();
    if (!decision.allow) return null;
    if (decision.filter && Object.keys(decision.filter).length > 0) {
      const matcher = compileMatcher(decision.filter);
      if (!matcher || !matcher(doc)) return null; // a filter the matcher cannot run is not guessed at
    }
    return decision.project ? decision.project(doc) : doc;
  }
}
