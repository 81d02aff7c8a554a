/**
 * Translation of a query mapping into backend reads. A call of a mapped field is resolved into a
 * `ResolvedQuery` (find with arguments and foreign values substituted, sort, skip, limit); a root
 * field's query becomes one read (or two, when skip is not a multiple of limit and no single page
 * covers the window), sliced to the window.
 */
import { isArgRef, isFkRef, type ArgRef, type QueryMapping } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import type { BackendReads } from './backend-reads.js';
import { canonicalKey, findOperatorKey } from '../values/ejson.js';
import { fieldError, foreignValueError, interpolateQuery, interpolateValue, missingArgument, setOwn, type ArgScope, type InterpolationNotes } from '../values/interpolate.js';
import { planPages } from './paging.js';
import { readPath } from '../values/paths.js';
import type { GraphqlLimits, ReadProjection } from '../types.js';

/** Sort used when a mapping has none: deterministic paging (the REST default would be `_id` descending). */
const DEFAULT_SORT: Readonly<Record<string, unknown>> = Object.freeze({ _id: 1 });

/** The `$in`-batchable shape of a join: `{path: {$fk}}` or `{path: {$in: {$fk}}}` plus fk-free entries. */
export interface InJoinShape {
  /** Field of the joined documents compared with the foreign value. */
  readonly path: string;
  /** Path of the foreign value in the parent document. */
  readonly fkPath: string;
  /** `{path: {$in: {$fk}}}` (the parent holds a list of values) rather than plain equality. */
  readonly list: boolean;
  /** The find without the foreign-key entry. */
  readonly rest: Record<string, unknown>;
}

export interface CompiledQueryMapping {
  /** `Type.field`, for messages. */
  readonly label: string;
  readonly db: string;
  readonly collection: string;
  readonly find: Record<string, unknown> | undefined;
  readonly sort: Record<string, unknown> | undefined;
  readonly skip: number | ArgRef | undefined;
  readonly limit: number | ArgRef | undefined;
  readonly inShape: InJoinShape | undefined;
  /** Batch group key when it does not depend on arguments (sort and non-fk conditions are literal). */
  readonly staticGroupKey: string | undefined;
}

export function compileQueryMapping(label: string, mapping: QueryMapping, defaultDb: string): CompiledQueryMapping {
  const db = mapping.db ?? defaultDb;
  const inShape = inJoinShape(mapping);
  const literal = (v: unknown) => v === undefined || !JSON.stringify(v).includes('"$arg"');
  const staticGroupKey =
    literal(mapping.sort) && (inShape ? literal(inShape.rest) : true)
      ? groupKeyOf(db, mapping.collection, mapping.sort ?? DEFAULT_SORT, inShape && { path: inShape.path, rest: inShape.rest })
      : undefined;
  return {
    label,
    db,
    collection: mapping.collection,
    find: mapping.find,
    sort: mapping.sort,
    skip: mapping.skip,
    limit: mapping.limit,
    inShape,
    staticGroupKey,
  };
}

/** Joins with equal keys can share one backend read: same collection and sort, same batching shape. */
function groupKeyOf(db: string, collection: string, sort: Readonly<Record<string, unknown>>, inJoin: { path: string; rest: Record<string, unknown> } | undefined): string {
  const shape = inJoin ? `in:${inJoin.path}:${canonicalKey(inJoin.rest)}` : 'or';
  return `${db}\u0000${collection}\u0000${canonicalKey(sort)}\u0000${shape}`;
}

function containsFk(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(containsFk);
  if (!isPlainObject(value)) return false;
  if (isFkRef(value)) return true;
  return Object.values(value).some(containsFk);
}

function inJoinShape(mapping: QueryMapping): InJoinShape | undefined {
  const find = mapping.find;
  if (!find || isArgRef(find) || containsFk(mapping.sort) || containsFk(mapping.skip) || containsFk(mapping.limit)) return undefined;
  let shape: InJoinShape | undefined;
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(find)) {
    if (!key.startsWith('$') && !shape && isFkRef(value)) {
      shape = { path: key, fkPath: value.$fk, list: false, rest };
    } else if (!key.startsWith('$') && !shape && isPlainObject(value) && Object.keys(value).length === 1 && isFkRef(value.$in)) {
      shape = { path: key, fkPath: value.$in.$fk, list: true, rest };
    } else if (containsFk(value)) {
      return undefined;
    } else setOwn(rest, key, value);
  }
  return shape;
}

export interface ResolvedQuery {
  readonly db: string;
  readonly collection: string;
  /** Possibly empty; the reader omits an empty filter. */
  readonly filter: Record<string, unknown>;
  readonly sort: Record<string, unknown>;
  readonly skip: number;
  readonly limit: number;
  /** Present for `$in`-batchable joins: the foreign values this parent joins on. */
  readonly inJoin?: {
    readonly path: string;
    readonly values: readonly unknown[];
    /** canonicalKey of each value. */
    readonly valueKeys: readonly string[];
    readonly rest: Record<string, unknown>;
  };
  /** Joins with the same key are batched together. */
  readonly groupKey: string;
  /** The fields to read (direct execution's projection); part of groupKey when present. */
  readonly projection?: ReadProjection;
}

/** `q` reading only `projection`'s fields: its group key names the projection, so only reads of one projection are batched together. */
export function projected(q: ResolvedQuery, projection: ReadProjection | undefined): ResolvedQuery {
  return projection === undefined ? q : { ...q, projection, groupKey: projectedGroupKey(q.groupKey, projection) };
}

export function projectedGroupKey(groupKey: string, projection: ReadProjection | undefined): string {
  return projection === undefined ? groupKey : `${groupKey}\u0001${projection.id}`;
}

/** `empty` when a foreign key is missing: the join matches nothing and needs no read. */
export type Resolution = { empty: true } | { empty: false; query: ResolvedQuery };

/**
 * Resolves one call of a mapped field. `single` (a non-list field) needs only the first document,
 * so the window shrinks to one. Throws GraphQL field errors for bad or missing arguments.
 */
export function resolveQuery(m: CompiledQueryMapping, scope: ArgScope, limits: GraphqlLimits, single: boolean): Resolution {
  const notes: InterpolationNotes = { nullForeignKey: false };
  const { skip, limit } = resolveWindow(m, scope, notes, limits, single);
  const sort = resolveSort(m, scope, notes);

  let inJoin: ResolvedQuery['inJoin'];
  let filter: Record<string, unknown>;
  if (m.inShape) {
    const shape = m.inShape;
    const found = foreignValues(shape, readPath(scope.parent, shape.fkPath));
    if (found === undefined) return { empty: true };
    const { values, valueKeys } = found;
    const rest = Object.keys(shape.rest).length === 0 ? shape.rest : interpolateQuery(shape.rest, scope, notes);
    inJoin = { path: shape.path, values, valueKeys, rest };
    filter = { ...rest, [shape.path]: shape.list ? { $in: values } : values[0] };
  } else {
    filter = m.find ? interpolateQuery(m.find, scope, notes) : {};
  }
  if (notes.nullForeignKey) return { empty: true };
  const groupKey = m.staticGroupKey ?? groupKeyOf(m.db, m.collection, sort, inJoin && { path: inJoin.path, rest: inJoin.rest });
  const query: ResolvedQuery = { db: m.db, collection: m.collection, filter, sort, skip, limit, groupKey };
  return { empty: false, query: inJoin ? { ...query, inJoin } : query };
}

/**
 * The values a parent's foreign value `fk` joins on (each checked: an operator object is a field
 * error), with their canonical keys; undefined when it joins nothing (missing, null, no values).
 */
export function foreignValues(shape: InJoinShape, fk: unknown): { values: unknown[]; valueKeys: string[] } | undefined {
  if (fk === undefined || fk === null) return undefined;
  const values: unknown[] = [];
  const valueKeys: string[] = [];
  for (const v of shape.list && Array.isArray(fk) ? fk : [fk]) {
    if (v === null || v === undefined) continue;
    checkForeignValue(shape, v);
    values.push(v);
    valueKeys.push(canonicalKey(v));
  }
  return values.length === 0 ? undefined : { values, valueKeys };
}

/** A foreign value that is an operator object would act as query syntax: a field error. */
export function checkForeignValue(shape: InJoinShape, v: unknown): void {
  if (typeof v === 'object' && v !== null) {
    const op = findOperatorKey(v);
    if (op !== undefined) throw foreignValueError(shape.fkPath, op);
  }
}

/**
 * A `$in` join of a non-root field whose mapping holds no `$arg` (find apart from the foreign
 * value, sort, skip, limit): everything but the parent's foreign value is computed once, when the
 * app is compiled, so each parent only reads its foreign value. `windowKey` says which window
 * (skip, limit, single) parents ask for: parents with equal foreign values share one load.
 */
export interface StaticInJoin {
  readonly db: string;
  readonly collection: string;
  readonly shape: InJoinShape;
  /** `shape.fkPath`, split. */
  readonly fkPath: readonly string[];
  /** `shape.rest`, interpolated (it holds neither `$arg` nor `$fk`, so it is the same for every parent). */
  readonly rest: Record<string, unknown>;
  readonly sort: Record<string, unknown>;
  readonly skip: number;
  readonly limit: number;
  readonly groupKey: string;
  readonly windowKey: string;
}

/** Which parents can share one load of a join: same skip, limit, and list or first document. */
export function windowKeyOf(skip: number, limit: number, single: boolean): string {
  return single ? `${skip}:${limit}:1` : `${skip}:${limit}`;
}

/**
 * Precomputes a static `$in` join (see `StaticInJoin`); undefined when the mapping is not one, or
 * when resolving it would fail (those errors are then raised per call by `resolveQuery`, as always).
 */
export function compileStaticInJoin(m: CompiledQueryMapping, limits: GraphqlLimits, single: boolean): StaticInJoin | undefined {
  const shape = m.inShape;
  if (!shape || m.staticGroupKey === undefined || typeof m.skip === 'object' || typeof m.limit === 'object') return undefined;
  const scope: ArgScope = { args: {} };
  const notes: InterpolationNotes = { nullForeignKey: false };
  try {
    const { skip, limit } = resolveWindow(m, scope, notes, limits, single);
    const sort = resolveSort(m, scope, notes);
    const rest = Object.keys(shape.rest).length === 0 ? shape.rest : interpolateQuery(shape.rest, scope, notes);
    if (notes.nullForeignKey) return undefined;
    return {
      db: m.db,
      collection: m.collection,
      shape,
      fkPath: shape.fkPath.split('.'),
      rest,
      sort,
      skip,
      limit,
      groupKey: m.staticGroupKey,
      windowKey: windowKeyOf(skip, limit, single),
    };
  } catch {
    return undefined;
  }
}

/** The query of one parent of a static `$in` join, as `resolveQuery` would resolve it (`under` a projection and its group key, for direct execution). */
export function staticInJoinQuery(j: StaticInJoin, values: unknown[], valueKeys: string[], under?: { projection: ReadProjection; groupKey: string }): ResolvedQuery {
  const { path, list } = j.shape;
  return {
    db: j.db,
    collection: j.collection,
    filter: { ...j.rest, [path]: list ? { $in: values } : values[0] },
    sort: j.sort,
    skip: j.skip,
    limit: j.limit,
    groupKey: under?.groupKey ?? j.groupKey,
    inJoin: { path, values, valueKeys, rest: j.rest },
    ...(under ? { projection: under.projection } : {}),
  };
}

function resolveWindow(m: CompiledQueryMapping, scope: ArgScope, notes: InterpolationNotes, limits: GraphqlLimits, single: boolean): { skip: number; limit: number } {
  const skip = resolveCount(m.skip, 'skip', scope, notes, 0);
  let limit = resolveCount(m.limit, 'limit', scope, notes, limits.defaultLimit);
  // RESTHeart passes limit 0 to MongoDB, where it means "no limit"; we give the most allowed.
  if (limit === 0) limit = limits.maxLimit;
  if (limit > limits.maxLimit) {
    throw fieldError(`limit must be at most ${limits.maxLimit} (graphql.maxLimit); got ${limit}`, 'LIMIT_TOO_LARGE');
  }
  if (single) limit = 1;
  return { skip, limit };
}

function resolveCount(spec: number | ArgRef | undefined, name: 'skip' | 'limit', scope: ArgScope, notes: InterpolationNotes, fallback: number): number {
  if (spec === undefined) return fallback;
  const value = typeof spec === 'number' ? spec : interpolateValue(spec, scope, notes);
  if (value === undefined) throw missingArgument(name);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw fieldError(`${name} must be an integer of at least 0; got ${JSON.stringify(value)}`, 'INVALID_ARGUMENT');
  }
  return value;
}

function resolveSort(m: CompiledQueryMapping, scope: ArgScope, notes: InterpolationNotes): Record<string, unknown> {
  if (!m.sort) return DEFAULT_SORT as Record<string, unknown>;
  const sort = interpolateValue(m.sort, scope, notes);
  if (!isPlainObject(sort)) throw fieldError('sort must be an object such as {"createdAt": -1}', 'INVALID_ARGUMENT');
  for (const [key, value] of Object.entries(sort)) {
    if (key.startsWith('$') || (value !== 1 && value !== -1)) {
      throw fieldError(`sort.${key} must be 1 or -1; got ${JSON.stringify(value)}`, 'INVALID_ARGUMENT');
    }
  }
  return Object.keys(sort).length === 0 ? (DEFAULT_SORT as Record<string, unknown>) : sort;
}

/** Reads the window [skip, skip+limit) of a query: one read, or two when no single page covers it. */
export async function readWindow(state: BackendReads, q: ResolvedQuery): Promise<unknown[]> {
  const plan = planPages(q.skip, q.limit);
  const base = { db: q.db, collection: q.collection, sort: q.sort, pagesize: plan.pagesize, ...(q.projection ? { projection: q.projection } : {}) };
  const filter = Object.keys(q.filter).length > 0 ? { filter: q.filter } : {};
  const first = await state.read({ ...base, ...filter, page: plan.page });
  let docs = first;
  if (plan.pages === 2 && first.length === plan.pagesize) {
    docs = first.concat(await state.read({ ...base, ...filter, page: plan.page + 1 }));
  }
  return state.present(docs.slice(plan.offset, plan.offset + plan.limit));
}
