/**
 * The in-memory databases: db name -> collection name -> documents in insertion order.
 *
 * Stored documents are never mutated in place: a write replaces the object. read-query.ts caches
 * decoded documents per object, and a reader holding an old array of results is not surprised.
 */
import { idKey } from './extended-json.js';

export type Doc = Record<string, unknown>;

/** Each stored document's id key, computed once (documents are never mutated in place). */
const idKeys = new WeakMap<Doc, string>();

export function docIdKey(doc: Doc): string {
  let key = idKeys.get(doc);
  if (key === undefined) idKeys.set(doc, (key = idKey(doc._id)));
  return key;
}

export class Store {
  private readonly dbs = new Map<string, Map<string, Doc[]>>();
  private readonly meta = new Map<string, Doc>();

  constructor(seed: Record<string, Record<string, Doc[]>> = {}) {
    for (const [db, collections] of Object.entries(seed)) {
      this.createDb(db);
      for (const [coll, docs] of Object.entries(collections)) {
        // A copy: the caller's seed objects stay theirs, and our writes never reach them.
        this.dbs.get(db)?.set(
          coll,
          docs.map((doc) => structuredClone(doc)),
        );
      }
    }
  }

  dbNames(): string[] {
    return [...this.dbs.keys()];
  }

  hasDb(db: string): boolean {
    return this.dbs.has(db);
  }

  /** True when the db was created by this call. */
  createDb(db: string): boolean {
    if (this.dbs.has(db)) return false;
    this.dbs.set(db, new Map());
    return true;
  }

  dropDb(db: string): boolean {
    return this.dbs.delete(db);
  }

  collectionNames(db: string): string[] {
    return [...(this.dbs.get(db)?.keys() ?? [])];
  }

  /** The live documents of a collection, or undefined when it does not exist. */
  documents(db: string, coll: string): Doc[] | undefined {
    return this.dbs.get(db)?.get(coll);
  }

  /** True when the collection was created by this call (the db is created too when needed). */
  createCollection(db: string, coll: string): boolean {
    this.createDb(db);
    const collections = this.dbs.get(db) as Map<string, Doc[]>;
    if (collections.has(coll)) return false;
    collections.set(coll, []);
    return true;
  }

  dropCollection(db: string, coll: string): boolean {
    this.meta.delete(`${db}\u0000${coll}`);
    return this.dbs.get(db)?.delete(coll) ?? false;
  }

  /** A collection's metadata (RESTHeart's collection properties, e.g. `aggrs`). */
  metadata(db: string, coll: string): Doc | undefined {
    return this.meta.get(`${db}\u0000${coll}`);
  }

  setMetadata(db: string, coll: string, meta: Doc): void {
    this.meta.set(`${db}\u0000${coll}`, meta);
  }

  findById(docs: Doc[], id: unknown): { doc: Doc; index: number } | undefined {
    const key = idKey(id);
    const index = docs.findIndex((doc) => docIdKey(doc) === key);
    const doc = docs[index];
    return doc ? { doc, index } : undefined;
  }
}
