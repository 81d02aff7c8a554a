/**
 * Batched `$fk` joins. Every join a request asks for while one level of the result is being
 * completed is queued; once graphql-js has visited all parents (after the current tick), the
 * queue is dispatched in groups that can share a read (same db, collection and sort):
 *
 * - `$in` groups (find is an equality, or `$in`, on a foreign value, plus identical other
 *   conditions): ONE read with `{...rest, path: {$in: [all parents' values]}}`, split back by
 *   comparing each document's `path` with each parent's values;
 * - `$or` groups (any other find): ONE read with `{$or: [each distinct interpolated find]}`, split
 *   back by evaluating each find on the documents locally; finds the local matcher does not
 *   implement are read one by one instead.
 *
 * Each parent then gets its own skip/limit window of its documents, in the group's sort order.
 * Parents that ask for the same documents in the same window while one batch is queued (20 users
 * of 100 orders) share one entry and one promise, as DataLoader's per-request cache does; the
 * batch, its reads and what each parent receives are the same as if each had queued its own.
 * A batch takes further pages of 1000 while a page comes back full and some parent still lacks
 * documents; a batch whose filter would make the URL too long is split into several reads whose
 * results are merged and sorted locally.
 */
import { isPlainObject } from '../../util/objects.js';
import type { BackendReads } from './backend-reads.js';
import { canonicalKey, compareForSort } from '../values/ejson.js';
import { compileMatcher, type Matcher } from '../values/local-match.js';
import { candidateValues, readPath } from '../values/paths.js';
import { readWindow, windowKeyOf, type ResolvedQuery } from './translate.js';
import { BACKEND_MAX_PAGESIZE, type ReadProjection } from '../types.js';
import { encodedQueryLength } from '../backend/http-reader.js';

interface Pending {
  readonly query: ResolvedQuery;
  /** A non-list field: resolves to the first document of the window, or null. */
  readonly single: boolean;
  /** `distinctKeyOf(query)`. */
  readonly distinctKey: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

interface Group {
  readonly db: string;
  readonly collection: string;
  readonly sort: Record<string, unknown>;
  readonly inPath: string | undefined;
  readonly rest: Record<string, unknown> | undefined;
  /** The fields read (the group key names it, so every entry asks for the same). */
  readonly projection: ReadProjection | undefined;
  readonly entries: Pending[];
  /** windowKey → distinctKey → the promise of the entry queued for it. */
  readonly shared: Map<string, Map<string, Promise<unknown>>>;
}

/** Requests of one group that ask for the same documents (same filter) share one split. */
interface Distinct {
  readonly filter: Record<string, unknown>;
  /** `$in` groups: canonical keys of the foreign values. */
  readonly valueKeys: readonly string[];
  readonly values: readonly unknown[];
  readonly entries: Pending[];
  /** Documents needed to serve every entry's window: max(skip + limit). */
  readonly needed: number;
}

export class JoinBatcher {
  private groups = new Map<string, Group>();
  private scheduled = false;

  constructor(private readonly state: BackendReads) {}

  /**
   * The load of a join queued in the current batch for the same group, window and documents, if
   * any (its promise is what `load` would give for an equal query).
   */
  shared(groupKey: string, windowKey: string, distinctKey: string): Promise<unknown> | undefined {
    const found = this.groups.get(groupKey)?.shared.get(windowKey)?.get(distinctKey);
    if (found !== undefined) {
      this.state.joinStats.loads++;
      this.state.joinStats.shared++;
    }
    return found;
  }

  /**
   * The documents of one parent's join, its skip/limit window applied: the list, or for a `single`
   * (non-list) field the first document or null. An equal join already queued in this batch is
   * shared; `windowKey` and `distinctKey` may be passed when the caller computed them.
   */
  load(query: ResolvedQuery, single: boolean, windowKey = windowKeyOf(query.skip, query.limit, single), distinctKey = distinctKeyOf(query)): Promise<unknown> {
    this.state.joinStats.loads++;
    let group = this.groups.get(query.groupKey);
    if (!group) {
      const inJoin = query.inJoin;
      group = {
        db: query.db,
        collection: query.collection,
        sort: query.sort,
        inPath: inJoin?.path,
        rest: inJoin?.rest,
        projection: query.projection,
        entries: [],
        shared: new Map(),
      };
      this.groups.set(query.groupKey, group);
    }
    let byDistinct = group.shared.get(windowKey);
    if (byDistinct === undefined) {
      byDistinct = new Map();
      group.shared.set(windowKey, byDistinct);
    } else {
      const queued = byDistinct.get(distinctKey);
      if (queued !== undefined) {
        this.state.joinStats.shared++;
        return queued;
      }
    }
    const entries = group.entries;
    const promise = new Promise<unknown>((resolve, reject) => entries.push({ query, single, distinctKey, resolve, reject }));
    byDistinct.set(distinctKey, promise);
    this.schedule();
    return promise;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // As DataLoader does: after the promise jobs of this tick, so every sibling has queued.
    void Promise.resolve().then(() =>
      process.nextTick(() => {
        this.scheduled = false;
        const groups = [...this.groups.values()];
        this.groups = new Map();
        for (const group of groups) {
          this.dispatch(group).catch((error: unknown) => {
            for (const entry of group.entries) entry.reject(error);
          });
        }
      }),
    );
  }

  private async dispatch(group: Group): Promise<void> {
    this.state.joinStats.batches++;
    const distinct = distinctRequests(group);
    if (distinct.length === 1) {
      const only = distinct[0] as Distinct;
      const windows = new Set(only.entries.map((e) => `${e.query.skip}:${e.query.limit}`));
      if (windows.size === 1) {
        // One find, one window: read exactly that window, as a root field would.
        const first = only.entries[0] as Pending;
        const docs = await readWindow(this.state, first.query);
        for (const entry of only.entries) entry.resolve(entry.single ? (docs[0] ?? null) : docs);
        return;
      }
    }
    if (group.inPath !== undefined) {
      await this.dispatchIn(group, group.inPath, distinct);
      return;
    }
    const matchers = distinct.map((d) => compileMatcher(d.filter));
    if (matchers.every((m): m is Matcher => m !== undefined)) {
      await this.dispatchOr(group, distinct, matchers);
      return;
    }
    // Some find uses an operator we cannot evaluate locally: read each find on its own.
    await Promise.all(
      distinct.map(async (d) => {
        const docs = await this.readBatch(group, [d.filter], [d], (all) => [all]);
        serve(this.state, d, docs);
      }),
    );
  }

  private async dispatchIn(group: Group, path: string, distinct: Distinct[]): Promise<void> {
    const seen = new Set<string>();
    const values: unknown[] = [];
    for (const d of distinct) {
      d.values.forEach((v, i) => {
        const k = d.valueKeys[i] as string;
        if (!seen.has(k)) {
          seen.add(k);
          values.push(v);
        }
      });
    }
    const rest = group.rest ?? {};
    const filters = chunkFilters(values, (chunk) => ({ ...rest, [path]: { $in: chunk } }), this.state.settings.maxFilterBytes);
    const split = (docs: unknown[]): unknown[][] => {
      const index = new Map<string, number[]>();
      docs.forEach((doc, i) => {
        for (const candidate of candidateValues(doc, path)) {
          const k = canonicalKey(candidate);
          const list = index.get(k);
          if (list === undefined) index.set(k, [i]);
          else if (list[list.length - 1] !== i) list.push(i);
        }
      });
      return distinct.map((d) => {
        if (d.valueKeys.length === 1) return (index.get(d.valueKeys[0] as string) ?? []).map((i) => docs[i]);
        const hits = new Set<number>();
        for (const k of d.valueKeys) for (const i of index.get(k) ?? []) hits.add(i);
        return [...hits].sort((a, b) => a - b).map((i) => docs[i]);
      });
    };
    const docs = await this.readBatch(group, filters, distinct, split);
    const parts = split(docs);
    distinct.forEach((d, i) => serve(this.state, d, parts[i] as unknown[]));
  }

  private async dispatchOr(group: Group, distinct: Distinct[], matchers: Matcher[]): Promise<void> {
    const filters = chunkFilters(
      distinct.map((d) => d.filter),
      (chunk) => (chunk.length === 1 ? (chunk[0] as Record<string, unknown>) : { $or: chunk }),
      this.state.settings.maxFilterBytes,
    );
    const split = (docs: unknown[]): unknown[][] => matchers.map((m) => docs.filter((doc) => m(doc)));
    const docs = await this.readBatch(group, filters, distinct, split);
    const parts = split(docs);
    distinct.forEach((d, i) => serve(this.state, d, parts[i] as unknown[]));
  }

  /**
   * Reads every filter (chunk) of a batch, page after page while a page is full and some request
   * still lacks documents; merges chunks (deduplicated, sorted locally by the group's sort).
   */
  private async readBatch(group: Group, filters: Record<string, unknown>[], distinct: Distinct[], split: (docs: unknown[]) => unknown[][]): Promise<unknown[]> {
    const pagesize = BACKEND_MAX_PAGESIZE;
    const chunks = await Promise.all(
      filters.map(async (filter) => {
        const docs: unknown[] = [];
        for (let page = 1; ; page++) {
          const read = { db: group.db, collection: group.collection, sort: group.sort, page, pagesize, ...(group.projection ? { projection: group.projection } : {}) };
          const got = await this.state.read(Object.keys(filter).length > 0 ? { ...read, filter } : read);
          docs.push(...got);
          if (got.length < pagesize) break;
          if (filters.length === 1 && satisfied(split(docs), distinct)) break;
        }
        return docs;
      }),
    );
    if (chunks.length === 1) return chunks[0] as unknown[];
    const seen = new Set<string>();
    const merged: unknown[] = [];
    for (const doc of chunks.flat()) {
      const id = isPlainObject(doc) && doc._id !== undefined ? canonicalKey(doc._id) : canonicalKey(doc);
      if (!seen.has(id)) {
        seen.add(id);
        merged.push(doc);
      }
    }
    return sortLocally(merged, group.sort);
  }
}

/** Marks a key of several foreign values (a single value's key is its canonicalKey, which never starts so). */
const SEVERAL = '\u0002';

/**
 * Which documents a join asks for within its group: its foreign values (`$in` groups; one value's
 * canonicalKey, or the JSON of several values' keys), or its find (`$or` groups). Equal keys
 * mean equal documents.
 */
function distinctKeyOf(q: ResolvedQuery): string {
  return q.inJoin ? valuesKey(q.inJoin.valueKeys) : canonicalKey(q.filter);
}

/** The distinct key of a `$in` join on values of these canonical keys. */
export function valuesKey(valueKeys: readonly string[]): string {
  return valueKeys.length === 1 ? (valueKeys[0] as string) : SEVERAL + JSON.stringify(valueKeys);
}

function distinctRequests(group: Group): Distinct[] {
  const byKey = new Map<string, { filter: Record<string, unknown>; values: readonly unknown[]; valueKeys: readonly string[]; entries: Pending[]; needed: number }>();
  for (const entry of group.entries) {
    const q = entry.query;
    const end = q.skip + q.limit;
    const d = byKey.get(entry.distinctKey);
    if (d) {
      d.entries.push(entry);
      if (end > d.needed) d.needed = end;
    } else {
      byKey.set(entry.distinctKey, { filter: q.filter, values: q.inJoin?.values ?? [], valueKeys: q.inJoin?.valueKeys ?? [], entries: [entry], needed: end });
    }
  }
  return [...byKey.values()];
}

function satisfied(parts: unknown[][], distinct: Distinct[]): boolean {
  return distinct.every((d, i) => (parts[i] as unknown[]).length >= d.needed);
}

/** Resolves each entry of `d` with its window of `docs` (the documents of `d`, in the group's sort order), as the client sees them. */
function serve(state: BackendReads, d: Distinct, docs: unknown[]): void {
  for (const entry of d.entries) {
    const { skip, limit } = entry.query;
    if (entry.single) {
      // The window of one document (limit is 1 for a non-list field).
      const doc = skip < docs.length && limit > 0 ? docs[skip] : undefined;
      entry.resolve(doc === undefined ? null : (state.presentOne(doc) ?? null));
      continue;
    }
    // Nobody changes a resolved list, so entries whose window is all of `docs` may share it.
    const window = skip === 0 && docs.length <= limit ? docs : docs.slice(skip, skip + limit);
    entry.resolve(state.present(window));
  }
}

/** Splits items into as few filters as keep each URL-encoded filter under `maxBytes`. */
function chunkFilters<T>(items: readonly T[], build: (chunk: T[]) => Record<string, unknown>, maxBytes: number): Record<string, unknown>[] {
  const whole = build([...items]);
  if (encodedLength(whole) <= maxBytes || items.length <= 1) return [whole];
  const base = encodedLength(build([]));
  const out: Record<string, unknown>[] = [];
  let chunk: T[] = [];
  let size = base;
  for (const item of items) {
    const itemSize = encodedQueryLength(JSON.stringify(item) ?? 'null') + 1;
    if (chunk.length > 0 && size + itemSize > maxBytes) {
      out.push(build(chunk));
      chunk = [];
      size = base;
    }
    chunk.push(item);
    size += itemSize;
  }
  if (chunk.length > 0) out.push(build(chunk));
  return out;
}

function encodedLength(filter: Record<string, unknown>): number {
  return encodedQueryLength(JSON.stringify(filter));
}

/** Stable local sort by a MongoDB sort document (used only to merge the chunks of a split batch). */
export function sortLocally(docs: unknown[], sort: Record<string, unknown>): unknown[] {
  const keys = Object.entries(sort).map(([path, dir]) => ({ path, dir: dir === -1 ? -1 : 1 }));
  return docs
    .map((doc, i) => ({ doc, i }))
    .sort((a, b) => {
      for (const { path, dir } of keys) {
        const c = compareForSort(sortValue(a.doc, path, dir), sortValue(b.doc, path, dir));
        if (c !== 0) return c * dir;
      }
      return a.i - b.i;
    })
    .map((x) => x.doc);
}

/** MongoDB sorts an array field by its smallest element ascending and its largest descending. */
function sortValue(doc: unknown, path: string, dir: number): unknown {
  const v = readPath(doc, path);
  if (!Array.isArray(v) || v.length === 0) return v === undefined ? null : v;
  return v.reduce((best: unknown, x: unknown) => (compareForSort(x, best) * dir < 0 ? x : best));
}
