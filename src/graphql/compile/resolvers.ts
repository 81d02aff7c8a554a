/**
 * The resolvers of a compiled app, from its mappings: query mappings read the backend (a root
 * field its window, a join through the request's batcher, answered synchronously by the
 * prefetcher where that changes nothing but the cost), aggregation mappings call their declared
 * aggregation, string mappings read a dot path, enum mappings translate stored values
 * (enum-mapping.ts), mutation fields write (writes/run.ts), and with `rootDoc` every object remembers the root document above it.
 */
import { getNamedType, getNullableType, isListType, isObjectType, type GraphQLField, type GraphQLFieldResolver, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';
import { ROOT_DOC_ARG, type GraphqlApp, type QueryMapping } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { canonicalKey } from '../values/ejson.js';
import type { ArgScope } from '../values/interpolate.js';
import { readPath } from '../values/paths.js';
import { aggregationCall } from '../reads/aggregations/call.js';
import type { AggregationMapping } from '../reads/aggregations/declared.js';
import { valuesKey } from '../reads/batch-joins.js';
import { NOT_PREFETCHED, Prefetcher, type JoinStart } from '../reads/prefetch.js';
import type { RequestState } from '../reads/request-state.js';
import {
  checkForeignValue,
  compileQueryMapping,
  compileStaticInJoin,
  foreignValues,
  projected,
  projectedGroupKey,
  readWindow,
  resolveQuery,
  staticInJoinQuery,
  type StaticInJoin,
} from '../reads/translate.js';
import { notHalted, type ExecutionDeadline } from '../limits/deadline.js';
import type { GraphqlLimits, ReadProjection } from '../types.js';
import { runWrite, type CompiledWrite } from '../writes/run.js';
import { argsInternalizer, enumMappings, outputEnumMapper } from './enum-mapping.js';

/** What resolvers receive as GraphQL context. */
export interface ExecutionContextValue {
  readonly state: RequestState;
  /** Halts completion once `timeoutMs` has passed (limits/deadline.ts). */
  readonly deadline?: ExecutionDeadline;
}

/**
 * How direct execution (engines/direct-plan.ts) may answer a field without calling its resolver:
 * its read, started as the resolver starts it (a root window or a join, `single` for a non-list
 * field), or the dot path its value is at. Only fields whose resolver does nothing else are
 * here: not with `rootDoc` (each object remembers its root), not without prefetching (joins are
 * then started lazily, in another order), not for enums (their values are translated).
 */
export type DirectField = { readonly read: JoinStart<RequestState>; readonly single: boolean; readonly projection: ProjectionNeeds } | { readonly path: readonly string[] };

/**
 * What a read's projection must keep besides the fields its answer selects. Only a root window
 * and a join whose find is a `$in` on the foreign value can say: a join the batcher matches
 * locally may look at any field of its documents, and its find at any field of its parent's.
 */
export interface ProjectionNeeds {
  /** `db` NUL `collection`: every read of one collection in a document shares one projection, so batching is unchanged. */
  readonly target: string;
  /** Fields of its own documents it needs (a join's `$in` path and sort: a split batch is merged by `_id` and sorted locally); undefined: any. */
  readonly keeps: readonly string[] | undefined;
  /** Fields of the parent documents it reads (a join's foreign key); undefined: any. */
  readonly parentNeeds: readonly string[] | undefined;
}

/**
 * What the planners of an app may answer (engines/), learnt while its resolvers are installed and
 * carried in the compiled app: nothing of it is global.
 */
export interface PlannerFacts {
  /** Fields with a query mapping: their lists are windows the cost estimate bounds, unlike lists stored inside documents (engines/compiled.ts looks). */
  readonly queryMapped: ReadonlySet<GraphQLField<unknown, unknown>>;
  /** How the direct planner may answer a field without calling its resolver (engines/direct-plan.ts). */
  readonly direct: ReadonlyMap<GraphQLField<unknown, unknown>, DirectField>;
}

/** What every field's resolver is built with: the app, its limits and modes, and what the planners may answer. */
interface ResolverBuild {
  readonly app: GraphqlApp;
  readonly limits: GraphqlLimits;
  readonly enumMaps: ReturnType<typeof enumMappings>;
  readonly usesRootDoc: boolean;
  /** Joins answered synchronously where that changes nothing but the cost (reads/prefetch.ts). */
  readonly prefetch: boolean;
  /** Fields direct execution may answer are reported (`directFields`). */
  readonly direct: boolean;
  readonly loading: { readonly joins: Map<GraphQLField<unknown, unknown>, JoinStart<RequestState>>; readonly all: Set<GraphQLField<unknown, unknown>> };
  readonly prefetcherOf: (state: RequestState, info: GraphQLResolveInfo) => Prefetcher<RequestState>;
  readonly queryMappedFields: Set<GraphQLField<unknown, unknown>>;
  readonly directFields: Map<GraphQLField<unknown, unknown>, DirectField>;
}

type Resolver = GraphQLFieldResolver<unknown, ExecutionContextValue>;

/** Sets `resolve` on every mapped field (and `isTypeOf` on every object type) of a freshly built schema. */
export function installResolvers(
  schema: GraphQLSchema,
  app: GraphqlApp,
  limits: GraphqlLimits,
  modes: { readonly prefetchJoins: boolean; readonly directExecution: boolean },
  writes: ReadonlyMap<string, CompiledWrite>,
): PlannerFacts {
  const queryType = schema.getQueryType();
  const mutationType = schema.getMutationType();
  const usesRootDoc = JSON.stringify(app.mappings).includes(`"${ROOT_DOC_ARG}.`);
  // Joins are answered synchronously where that changes nothing but the cost (reads/prefetch.ts).
  // Not with rootDoc: each parent then needs its own copies of the joined documents.
  const prefetch = modes.prefetchJoins && !usesRootDoc;
  const loading = { joins: new Map<GraphQLField<unknown, unknown>, JoinStart<RequestState>>(), all: new Set<GraphQLField<unknown, unknown>>() };
  const b: ResolverBuild = {
    app,
    limits,
    enumMaps: enumMappings(schema, app),
    usesRootDoc,
    prefetch,
    // Direct execution starts joins as the prefetcher does, so only where the prefetcher would.
    direct: modes.directExecution && prefetch,
    loading,
    prefetcherOf: (state, info) => (state.prefetcher ??= new Prefetcher(state, loading, info)),
    queryMappedFields: new Set(),
    directFields: new Map(),
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    type.isTypeOf ??= notHalted;
    // Subscription fields read nothing: the change is their root value (subscribe/, SPEC §6.5).
    if (type === schema.getSubscriptionType()) continue;
    const isRoot = type === queryType;
    const mappings = app.mappings[type.name] ?? {};
    for (const field of Object.values(type.getFields())) {
      const write = type === mutationType ? writes.get(field.name) : undefined;
      if (write) {
        const internalize = argsInternalizer(field, b.enumMaps);
        field.resolve = ((_source, args, context: ExecutionContextValue) => runWrite(write, internalize(args), context.state, field)) as GraphQLFieldResolver<unknown, unknown>;
        continue;
      }
      const resolve = withEnumOutput(b, field, mappedResolver(b, `${type.name}.${field.name}`, field, isRoot, mappings[field.name]));
      if (resolve) field.resolve = resolve as GraphQLFieldResolver<unknown, unknown>;
    }
  }
  return { queryMapped: b.queryMappedFields, direct: b.directFields };
}

/** A field's resolver from its mapping (aggregation, query, dot path, or a rootDoc-marking read); undefined: graphql-js's default. */
function mappedResolver(b: ResolverBuild, name: string, field: GraphQLField<unknown, unknown>, isRoot: boolean, mapping: unknown): Resolver | undefined {
  const { usesRootDoc } = b;
  if (isPlainObject(mapping) && 'stages' in mapping) {
    const [typeName, fieldName] = name.split('.') as [string, string];
    const call = aggregationCall(b.app._id ?? b.app.descriptor.uri, typeName, fieldName, mapping as unknown as AggregationMapping, b.limits.defaultDb);
    const single = !isListType(getNullableType(field.type));
    const internalize = argsInternalizer(field, b.enumMaps);
    return (source, args, context) => call(source, internalize(args), context.state).then((docs) => (single ? (docs[0] ?? null) : docs));
  }
  if (isPlainObject(mapping)) return queryResolver(b, name, field, isRoot, mapping as unknown as QueryMapping);
  if (typeof mapping === 'string') {
    const path = mapping.split('.');
    if (b.direct) b.directFields.set(field, { path });
    return usesRootDoc ? (source, _args, context) => propagate(context, usesRootDoc, source, readPath(source, path)) : (source) => readPath(source, path);
  }
  if (usesRootDoc && isObjectType(getNamedType(field.type))) {
    const fieldName = field.name;
    return (source, _args, context) => propagate(context, usesRootDoc, source, source !== null && typeof source === 'object' ? (source as Record<string, unknown>)[fieldName] : undefined);
  }
  return undefined;
}

/** A query mapping's resolver: its read started at once, or through the prefetcher where it answers joins. */
function queryResolver(b: ResolverBuild, name: string, field: GraphQLField<unknown, unknown>, isRoot: boolean, mapping: QueryMapping): Resolver {
  const { loading, prefetcherOf } = b;
  const compiled = compileQueryMapping(name, mapping, b.limits.defaultDb);
  const single = !isListType(getNullableType(field.type));
  const fixed = isRoot ? undefined : compileStaticInJoin(compiled, b.limits, single);
  const start = joinStart(b, { compiled, fixed, single, isRoot }, argsInternalizer(field, b.enumMaps));
  loading.all.add(field);
  b.queryMappedFields.add(field);
  if (b.direct) b.directFields.set(field, { read: start, single, projection: projectionNeeds(compiled.db, compiled.collection, isRoot, fixed) });
  if (!isRoot) loading.joins.set(field, start);
  if (!b.prefetch) return (source, args, context) => start(source, args, context.state);
  if (isRoot) {
    return (source, args, context, info) => (loading.joins.size === 0 ? start(source, args, context.state) : prefetcherOf(context.state, info).afterLoad(start(source, args, context.state), info));
  }
  return (source, args, context, info) => {
    const state = context.state;
    const prefetcher = prefetcherOf(state, info);
    const known = prefetcher.answer(info, source);
    return known !== NOT_PREFETCHED ? known : prefetcher.afterLoad(start(source, args, state), info);
  };
}

/** What a query field resolves to: its value, a promise of it, or a thrown field error. */
function joinStart(
  b: ResolverBuild,
  read: { readonly compiled: ReturnType<typeof compileQueryMapping>; readonly fixed: StaticInJoin | undefined; readonly single: boolean; readonly isRoot: boolean },
  internalize: (args: Record<string, unknown>) => Record<string, unknown>,
): JoinStart<RequestState> {
  const { compiled, fixed, single, isRoot } = read;
  const { usesRootDoc } = b;
  // The group key of this join under each projection, made once: a key built per parent was hashed anew by every lookup.
  const projectedGroupKeys = new WeakMap<ReadProjection, string>();
  const projectedGroupKeyOf = (projection: ReadProjection): string => {
    let key = projectedGroupKeys.get(projection);
    if (key === undefined) {
      key = projectedGroupKey((fixed as StaticInJoin).groupKey, projection);
      projectedGroupKeys.set(projection, key);
    }
    return key;
  };
  /** A parent's join, with its own copies of the documents when the app uses rootDoc. */
  const ownJoin = (state: RequestState, source: unknown, pending: Promise<unknown>): Promise<unknown> =>
    !usesRootDoc
      ? pending
      : pending.then((shared) => {
          // Batched joins share document objects between parents; each parent needs its own
          // copies so that every object knows its one root document.
          const own = structuredClone(shared);
          const root = state.rootOf.get(source as object);
          for (const doc of single ? [own] : (own as unknown[])) {
            if (doc !== null && typeof doc === 'object') state.rootOf.set(doc, root);
          }
          return own;
        });
  return (source, args, state, projection) => {
    if (fixed !== undefined) {
      // Everything but the foreign value was resolved at compile time (as resolveQuery would).
      const fk = readPath(source, fixed.fkPath);
      if (fk === undefined || fk === null) return single ? null : [];
      let distinctKey: string;
      let found: { values: unknown[]; valueKeys: string[] } | undefined;
      if (fixed.shape.list && Array.isArray(fk)) {
        found = foreignValues(fixed.shape, fk);
        if (found === undefined) return single ? null : [];
        distinctKey = valuesKey(found.valueKeys);
      } else {
        checkForeignValue(fixed.shape, fk);
        distinctKey = canonicalKey(fk);
      }
      const groupKey = projection === undefined ? fixed.groupKey : projectedGroupKeyOf(projection);
      const pending =
        state.joins.shared(groupKey, fixed.windowKey, distinctKey) ??
        state.joins.load(
          staticInJoinQuery(fixed, found?.values ?? [fk], found?.valueKeys ?? [distinctKey], projection === undefined ? undefined : { projection, groupKey }),
          single,
          fixed.windowKey,
          distinctKey,
        );
      return ownJoin(state, source, pending);
    }
    const scope: ArgScope = {
      args: internalize(args),
      parent: source,
      rootDoc: !isRoot && usesRootDoc && source !== null && typeof source === 'object' ? state.rootOf.get(source) : undefined,
    };
    const r = resolveQuery(compiled, scope, state.limits, single);
    if (r.empty) return single ? null : [];
    if (!isRoot) return ownJoin(state, source, state.joins.load(r.query, single));
    const read = readWindow(state, projected(r.query, projection));
    if (!usesRootDoc && !single) return read;
    return read.then((docs) => {
      if (usesRootDoc) {
        for (const doc of docs) {
          if (doc !== null && typeof doc === 'object') state.rootOf.set(doc, doc);
        }
      }
      return single ? (docs[0] ?? null) : docs;
    });
  };
}

/** An enum field's resolver: the stored value translated to the enum's name (and the field left to graphql-js). */
function withEnumOutput(b: ResolverBuild, field: GraphQLField<unknown, unknown>, resolve: Resolver | undefined): Resolver | undefined {
  const enumOut = outputEnumMapper(field.type, b.enumMaps);
  if (!enumOut) return resolve;
  b.directFields.delete(field);
  const inner = resolve;
  const name = field.name;
  return (source, args, context, info) => {
    const value = inner ? inner(source, args, context, info) : source !== null && typeof source === 'object' ? (source as Record<string, unknown>)[name] : undefined;
    return value instanceof Promise ? value.then(enumOut) : enumOut(value);
  };
}

/** Marks objects reached below a root document as belonging to it (for `rootDoc`). */
function propagate(context: ExecutionContextValue, usesRootDoc: boolean, source: unknown, value: unknown): unknown {
  if (!usesRootDoc || source === null || typeof source !== 'object') return value;
  const root = context.state.rootOf.get(source);
  if (root === undefined) return value;
  const mark = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(mark);
    else if (v !== null && typeof v === 'object' && !context.state.rootOf.has(v)) context.state.rootOf.set(v, root);
  };
  mark(value);
  return value;
}

function projectionNeeds(db: string, collection: string, isRoot: boolean, fixed: StaticInJoin | undefined): ProjectionNeeds {
  const target = `${db}\u0000${collection}`;
  if (isRoot) return { target, keeps: [], parentNeeds: [] };
  if (fixed === undefined) return { target, keeps: undefined, parentNeeds: undefined };
  const top = (path: string) => path.split('.')[0] as string;
  return { target, keeps: ['_id', top(fixed.shape.path), ...Object.keys(fixed.sort).map(top)], parentNeeds: [fixed.fkPath[0] as string] };
}
