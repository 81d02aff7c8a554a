/**
 * What a cached read belongs to and what a write drops (SPEC §12 "What a write drops, exactly"):
 * a path under `graphql.backend.collectionPath` belongs to its collection (the collection, its
 * documents, `_aggrs` and the rest below it); a path of the db itself (`/db`, `/db/_size`) to
 * the db; anything else to the whole service.
 *
 * A path that names one document (`/db/coll/<id>`) is a document scope. A write to a document
 * (`PATCH`, `PUT`, `DELETE /db/coll/<id>`) can change only that document and the collection's
 * queries (a list, a filter, a count, an aggregation may hold it), never another document read
 * by its own path: it drops those two and keeps the other documents' reads. A write to the
 * collection itself (a `POST`, a bulk `/db/coll/*?filter=`, a `PUT` of the collection) drops
 * everything below it. Measured (bench, 90 % reads / 10 % writes over 1,000 documents read by
 * id): dropping the whole collection at each write left almost every read a miss.
 *
 * Generations count the drops. They live in fixed arrays of slots indexed by a hash of the
 * name, never in a map keyed by names a client chooses: a flood of writes to invented
 * collections cannot grow them, and two names sharing a slot only drop each other's reads more
 * often than needed, never less.
 */

export type CacheScope =
  | {
      readonly level: 'collection';
      readonly db: string;
      readonly collection: string;
      /** The id segment when the path names one document (its 404 is worth keeping, and a write to it drops only it and the queries). */
      readonly document?: string;
    }
  | { readonly level: 'db'; readonly db: string }
  | { readonly level: 'all' };

export const ALL: CacheScope = Object.freeze({ level: 'all' });

/** `/{db}/{collection}` → a classifier of canonical paths. */
export function scopeClassifier(collectionPath: string): (path: string) => CacheScope {
  const pattern = collectionPath.split('/').filter(Boolean);
  const dbAt = pattern.indexOf('{db}');
  const collectionAt = pattern.indexOf('{collection}');
  return (path) => {
    const segments = path.split('/').filter(Boolean);
    for (let i = 0; i < pattern.length && i < segments.length; i++) {
      if (i !== dbAt && i !== collectionAt && pattern[i] !== segments[i]) return ALL;
    }
    const db = dbAt === -1 ? '' : segments[dbAt];
    if (dbAt !== -1 && (db === undefined || db.startsWith('_'))) return ALL;
    const collection = segments[collectionAt];
    if (collection === undefined || collection.startsWith('_') || segments.length < pattern.length) return db ? { level: 'db', db } : ALL;
    const last = segments[pattern.length];
    // `*` is RESTHeart's bulk path (`PATCH /db/coll/*?filter=`): the whole collection.
    if (segments.length === pattern.length + 1 && !last!.startsWith('_') && last !== '*') return { level: 'collection', db: db ?? '', collection, document: last! };
    return { level: 'collection', db: db ?? '', collection };
  };
}

export const SLOTS = 4096;
/**
 * Documents get more slots than collections and dbs: a write to a document drops every document
 * read sharing its slot, and a service's documents are many. With 4,096 slots, 1,000 documents
 * read and written at random (bench, 90 % reads / 10 % writes) cost 13 % more backend reads than
 * a cache that drops only the written document must make (2,326 against at least 2,059): a write
 * dropped 0.15 other documents on average. With 65,536 (512 KiB of counters per process) none of
 * those 1,000 share a slot, and of 10,000 documents a write drops 0.13 others (2.4 with 4,096).
 */
export const DOCUMENT_SLOTS = 65_536;

/** FNV-1a: a fast, well-spread hash of a short name into `slots` slots. */
export function slotOf(name: string, slots = SLOTS): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return (h >>> 0) % slots;
}

/** The slot of a document's own counter (`db/coll/id`). */
export function documentSlot(scope: { readonly db: string; readonly collection: string; readonly document?: string }): number {
  return slotOf(`${scope.db}/${scope.collection}/${scope.document ?? ''}`, DOCUMENT_SLOTS);
}

/**
 * Per process: the drops so far, by collection (everything below it), by the collection's
 * queries (what a document write changes besides the document), by document, by db (a write to
 * the db itself), by the db's own reads (any write in the db changes its listing) and for the
 * whole service. A read's generation is the sum of the counters that can drop it; counters only
 * grow, so the sum changes exactly when one of them did.
 */
export class Generations {
  private readonly collections = new Float64Array(SLOTS);
  private readonly queries = new Float64Array(SLOTS);
  private readonly documents = new Float64Array(DOCUMENT_SLOTS);
  private readonly dbs = new Float64Array(SLOTS);
  private readonly dbReads = new Float64Array(SLOTS);
  private all = 0;

  of(scope: CacheScope): number {
    if (scope.level === 'all') return this.all;
    const db = slotOf(scope.db);
    if (scope.level === 'db') return this.all + this.dbs[db]! + this.dbReads[db]!;
    const collection = slotOf(`${scope.db}/${scope.collection}`);
    const own = scope.document === undefined ? this.queries[collection]! : this.documents[documentSlot(scope)]!;
    return this.all + this.dbs[db]! + this.collections[collection]! + own;
  }

  /** A write to `scope` happened (or may have): every read it can have changed gets a new generation. */
  bump(scope: CacheScope): void {
    if (scope.level === 'all') this.all++;
    else if (scope.level === 'db') this.dbs[slotOf(scope.db)]!++;
    else {
      const collection = slotOf(`${scope.db}/${scope.collection}`);
      if (scope.document === undefined) this.collections[collection]!++;
      else {
        this.documents[documentSlot(scope)]!++;
        this.queries[collection]!++;
      }
      this.dbReads[slotOf(scope.db)]!++;
    }
  }
}

/** `db/coll` (the admin route's and the CLI's `--collection`), `db`, or a problem. */
export function parseScope(text: string): CacheScope | string {
  const parts = text.split('/').filter(Boolean);
  if (parts.length === 0 || parts.length > 2 || parts.some((p) => p.startsWith('_'))) return `must be db/collection or db (got ${JSON.stringify(text)})`;
  return parts.length === 1 ? { level: 'db', db: parts[0]! } : { level: 'collection', db: parts[0]!, collection: parts[1]! };
}

export function scopeName(scope: CacheScope): string {
  return scope.level === 'all' ? '*' : scope.level === 'db' ? scope.db : `${scope.db}/${scope.collection}`;
}
