/**
 * The read parameters of `GET /{db}/{coll}` as RESTHeart reads them (MongoRequestPropsInjector,
 * MongoRequest.getFiltersDocument/getSortByDocument) and their evaluation with mingo.
 *
 * - `filter`: relaxed JSON object; repeated filters are combined with `$and`; `{}` and non-objects
 *   are 400; `$where` is refused (RESTHeart's default `filterOperatorsBlacklist`), and so are
 *   `$function`/`$accumulator`, which would run code inside mingo.
 * - `sort_by` (or, when absent, `sort`): JSON objects or `field`, `-field`, `+field`, merged in
 *   order; default `{_id: -1}`.
 * - `keys`: projection objects, merged.
 * - `page` ≥ 1 (default 1), `pagesize` 0…1000 (default 100); pagesize 0 reads no documents.
 * - `count` (any value; `count=estimated` is reported as such when there is no filter).
 * - `rep`: `hal`/`shal`/`pj`/`plain_json`/`nested` wrap the page in `_embedded`; anything else is
 *   the STANDARD plain array (RESTHeart ignores an unknown rep with a warning).
 */
import { Query, find } from 'mingo';
import { HttpProblem } from './http.js';
import { docIdKey } from './store.js';
import { ObjectIdValue, decodeExtendedJson, isPlainObject } from './extended-json.js';
import { parseRelaxedJson } from './relaxed-json.js';

export const DEFAULT_PAGESIZE = 100;
export const MAX_PAGESIZE = 1000;

export type SortSpec = Record<string, 1 | -1>;

export interface ReadQuery {
  /** Decoded criteria (see extended-json.ts), undefined when no filter was given. */
  filter: Record<string, unknown> | undefined;
  sort: SortSpec;
  projection: Record<string, unknown> | undefined;
  page: number;
  pagesize: number;
  count: 'exact' | 'estimated' | undefined;
  hal: boolean;
}

const HAL_REPS = new Set(['HAL', 'SHAL', 'PJ', 'PLAIN_JSON', 'NESTED']);
const BLOCKED_OPERATORS = new Set(['$where', '$function', '$accumulator']);
/** mingo must not evaluate JavaScript handed in by a client. */
const MINGO_OPTIONS = { scriptEnabled: false };

export function parseReadQuery(query: URLSearchParams): ReadQuery {
  const pagesize = parseInteger(query.get('pagesize'), 'pagesize', DEFAULT_PAGESIZE);
  if (pagesize < 0 || pagesize > MAX_PAGESIZE) {
    throw new HttpProblem(400, `illegal pagesize parameter, pagesize must be >= 0 and <= ${MAX_PAGESIZE}`);
  }
  const page = parseInteger(query.get('page'), 'page', 1);
  if (page < 1) throw new HttpProblem(400, 'illegal page parameter, it is < 1');

  const filter = parseFilters(query);
  const countParam = query.get('count');
  const count = countParam === null ? undefined : countParam === 'estimated' && !filter ? 'estimated' : 'exact';
  const rep = (query.get('rep') ?? '').trim().toUpperCase();
  return { filter, sort: parseSort(query), projection: parseKeys(query), page, pagesize, count, hal: HAL_REPS.has(rep) };
}

function parseInteger(raw: string | null, name: string, fallback: number): number {
  if (raw === null || raw === '') return fallback;
  if (!/^[+-]?\d+$/.test(raw.trim())) throw new HttpProblem(400, `illegal ${name} parameter, it is not a number`);
  return Number(raw.trim());
}

/** All `filter` parameters, ANDed when repeated, decoded for mingo; undefined when there are none. */
export function parseFilters(query: URLSearchParams): Record<string, unknown> | undefined {
  const raw = query.getAll('filter');
  if (raw.length === 0) return undefined;
  const filters = raw.map((text) => {
    if (text.trim() === '') throw new HttpProblem(400, 'illegal filter parameter (empty)');
    const parsed = parseJsonParameter(text, 'filter');
    if (!isPlainObject(parsed)) throw new HttpProblem(400, `illegal filter parameter, it is not a json object: ${text}`);
    if (Object.keys(parsed).length === 0) {
      throw new HttpProblem(400, 'illegal filter parameter (empty json object); omit the filter to read everything');
    }
    refuseBlockedOperators(parsed);
    return decodeExtendedJson(parsed) as Record<string, unknown>;
  });
  const criteria = filters.length === 1 ? (filters[0] as Record<string, unknown>) : { $and: filters };
  compileQuery(criteria); // a bad operator is the client's error: report it now, as a 400
  return criteria;
}

function parseSort(query: URLSearchParams): SortSpec {
  const raw = query.has('sort_by') ? query.getAll('sort_by') : query.getAll('sort');
  if (raw.length === 0) return { _id: -1 };
  const sort: SortSpec = {};
  for (const entry of raw) {
    // A '+' in a query string decodes to a space, hence the trim (RESTHeart does the same).
    const text = entry.trim();
    if (text === '') throw new HttpProblem(400, 'illegal sort parameter (empty)');
    if (text.startsWith('{')) {
      const parsed = parseJsonParameter(text, 'sort');
      if (!isPlainObject(parsed)) throw new HttpProblem(400, `illegal sort parameter, it is not a json object: ${text}`);
      for (const [field, direction] of Object.entries(parsed)) {
        if (direction !== 1 && direction !== -1) {
          throw new HttpProblem(400, `illegal sort parameter: the direction of '${field}' must be 1 or -1`);
        }
        sort[field] = direction;
      }
    } else if (text.startsWith('-')) {
      sort[text.slice(1)] = -1;
    } else {
      sort[text.startsWith('+') ? text.slice(1) : text] = 1;
    }
  }
  return sort;
}

/** All `keys` parameters merged into one projection; undefined when there are none. */
export function parseKeys(query: URLSearchParams): Record<string, unknown> | undefined {
  const raw = query.getAll('keys');
  if (raw.length === 0) return undefined;
  const projection: Record<string, unknown> = {};
  for (const text of raw) {
    if (text.trim() === '') throw new HttpProblem(400, 'illegal keys parameter (empty)');
    const parsed = parseJsonParameter(text, 'keys');
    if (!isPlainObject(parsed)) throw new HttpProblem(400, `illegal keys parameter, it is not a json object: ${text}`);
    Object.assign(projection, parsed);
  }
  return projection;
}

function parseJsonParameter(text: string, name: string): unknown {
  try {
    return parseRelaxedJson(text);
  } catch (err) {
    throw new HttpProblem(400, `illegal ${name} parameter: ${text}, ${(err as Error).message}`);
  }
}

function refuseBlockedOperators(value: unknown): void {
  if (Array.isArray(value)) {
    value.forEach(refuseBlockedOperators);
  } else if (isPlainObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (BLOCKED_OPERATORS.has(key)) throw new HttpProblem(400, `illegal filter parameter: the operator ${key} is not allowed`);
      refuseBlockedOperators(inner);
    }
  }
}

function compileQuery(criteria: Record<string, unknown>): Query {
  try {
    return new Query(criteria, MINGO_OPTIONS);
  } catch (err) {
    throw new HttpProblem(400, `illegal filter parameter: ${(err as Error).message}`);
  }
}

// Decoding is per stored object; writes replace objects, so a cached decoding never goes stale.
const decodedCache = new WeakMap<object, Record<string, unknown>>();

function decoded(doc: Record<string, unknown>): Record<string, unknown> {
  let value = decodedCache.get(doc);
  if (!value) {
    value = decodeExtendedJson(doc) as Record<string, unknown>;
    decodedCache.set(doc, value);
  }
  return value;
}

/** The stored documents (untouched objects) that match decoded criteria. */
export function matchDocuments(docs: ReadonlyArray<Record<string, unknown>>, criteria: Record<string, unknown> | undefined): Array<Record<string, unknown>> {
  if (!criteria) return [...docs];
  const query = compileQuery(criteria);
  const ids = idCandidates(criteria);
  return docs.filter((doc) => (ids === undefined || mayHaveId(doc, ids)) && query.test(decoded(doc)));
}

/**
 * The `_id`s a filter allows, when it says so plainly (`{_id: X}`, `{_id: {$in: [...]}}` or
 * `{_id: {$eq: X}}`, at the top or in a top-level `$and`) with ObjectIds or strings: the documents
 * with another ObjectId or string `_id` are skipped before the full test, as MongoDB's `_id`
 * index does (re-reads by `_id` do not scan the collection). Only narrows: every other document
 * still goes through the full test.
 */
function idCandidates(criteria: Record<string, unknown>): Set<string> | undefined {
  const plain = (v: unknown): string | undefined => (v instanceof ObjectIdValue ? v.hex : typeof v === 'string' ? v : undefined);
  const of = (value: unknown): Set<string> | undefined => {
    const single = plain(value);
    if (single !== undefined) return new Set([single]);
    if (!isPlainObject(value)) return undefined;
    if ('$eq' in value) {
      const eq = plain(value.$eq);
      return eq === undefined ? undefined : new Set([eq]);
    }
    if (Array.isArray(value.$in)) {
      const all = value.$in.map(plain);
      return all.every((v) => v !== undefined) ? new Set(all as string[]) : undefined;
    }
    return undefined;
  };
  if ('_id' in criteria) {
    const direct = of(criteria._id);
    if (direct) return direct;
  }
  if (Array.isArray(criteria.$and)) {
    for (const part of criteria.$and) {
      if (isPlainObject(part)) {
        const inner = idCandidates(part);
        if (inner) return inner;
      }
    }
  }
  return undefined;
}

/** Could this document's `_id` be one of these (always, unless it is an ObjectId or a string not among them)? */
function mayHaveId(doc: Record<string, unknown>, ids: Set<string>): boolean {
  const key = docIdKey(doc);
  if (key.startsWith('oid:')) return ids.has(key.slice(4));
  if (key.startsWith('str:')) return ids.has(key.slice(4));
  return true;
}

/** Sorts stored documents by their decoded values, so dates and ObjectIds order like in MongoDB. */
export function sortDocuments(docs: Array<Record<string, unknown>>, sort: SortSpec): Array<Record<string, unknown>> {
  const byDecoded = new Map<Record<string, unknown>, Record<string, unknown>>();
  for (const doc of docs) byDecoded.set(decoded(doc), doc);
  const sorted = find([...byDecoded.keys()], {}, undefined, MINGO_OPTIONS)
    .sort(sort)
    .all() as Array<Record<string, unknown>>;
  return sorted.map((d) => byDecoded.get(d) as Record<string, unknown>);
}

/** Applies a projection to stored documents; their extended JSON values pass through as they are. */
export function projectDocuments(docs: Array<Record<string, unknown>>, projection: Record<string, unknown> | undefined): Array<Record<string, unknown>> {
  if (!projection || Object.keys(projection).length === 0) return docs;
  const plain = plainProjection(projection);
  if (plain) return docs.map(plain);
  try {
    return find(docs, {}, projection, MINGO_OPTIONS).all() as Array<Record<string, unknown>>;
  } catch (err) {
    throw new HttpProblem(400, `illegal keys parameter: ${(err as Error).message}`);
  }
}

/**
 * A projection of top-level fields only (each 0 or 1, no dots, no operators) applied without
 * mingo, keeping the document's own field order as MongoDB does: mingo's projection cost this
 * stand-in three times its read (Outrigger's GraphQL reads send `keys`, issue 39). Undefined for
 * anything else, including what MongoDB refuses (an exclusion inside an inclusion), which mingo
 * then words.
 */
function plainProjection(projection: Record<string, unknown>): ((doc: Record<string, unknown>) => Record<string, unknown>) | undefined {
  const entries = Object.entries(projection);
  if (!entries.every(([k, v]) => k !== '' && !k.includes('.') && !k.startsWith('$') && (v === 0 || v === 1 || v === true || v === false))) return undefined;
  const on = (v: unknown) => v === 1 || v === true;
  const included = new Set(entries.filter(([k, v]) => k !== '_id' && on(v)).map(([k]) => k));
  const excluded = new Set(entries.filter(([k, v]) => k !== '_id' && !on(v)).map(([k]) => k));
  if (included.size > 0 && excluded.size > 0) return undefined;
  const withId = projection._id === undefined || on(projection._id);
  const keeps = (k: string) => (k === '_id' ? withId : included.size > 0 ? included.has(k) : !excluded.has(k));
  return (doc) => {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(doc)) if (keeps(k)) out[k] = doc[k];
    return out;
  };
}

export interface ReadResult {
  documents: Array<Record<string, unknown>>;
  /** Number of documents matching the filter, before paging. */
  total: number;
}

export function runRead(docs: ReadonlyArray<Record<string, unknown>>, query: ReadQuery): ReadResult {
  const matched = matchDocuments(docs, query.filter);
  if (query.pagesize === 0) return { documents: [], total: matched.length };
  const start = (query.page - 1) * query.pagesize;
  const page = sortDocuments(matched, query.sort).slice(start, start + query.pagesize);
  return { documents: projectDocuments(page, query.projection), total: matched.length };
}
