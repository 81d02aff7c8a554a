/**
 * App document → executable app: the schema is built once per app version, resolvers are derived
 * from the mappings (query mappings read the backend, string mappings read a dot path, enum
 * mappings translate stored values), and parsed + validated query documents are cached (LRU).
 */
import { createHash } from 'node:crypto';
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isObjectType,
  Kind,
  NoSchemaIntrospectionCustomRule,
  specifiedRules,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { ValidationError } from '../../errors.js';
import { isPlainObject, ROOT_DOC_ARG, type GraphqlApp, type QueryMapping } from '../app-document.js';
import { depthLimitRule } from '../limits/depth-limit.js';
import { canonicalKey } from '../values/ejson.js';
import type { ArgScope } from '../values/interpolate.js';
import { readPath } from '../values/paths.js';
import { NOT_PREFETCHED, Prefetcher, type JoinStart } from '../reads/prefetch.js';
import type { EngineSettings } from '../reads/backend-reads.js';
import type { RequestState } from '../reads/request-state.js';
import { valuesKey } from '../reads/batch-joins.js';
import {
  checkForeignValue,
  compileQueryMapping,
  compileStaticInJoin,
  foreignValues,
  readWindow,
  resolveQuery,
  staticInJoinQuery,
} from '../reads/translate.js';
import { DEFAULT_LIMITS, type BackendReader, type GraphqlLimits, type ReadPolicy, type RequestContext } from '../types.js';
import { validateAppWithSchema } from '../document/validate-app.js';
import { installTypeResolvers } from '../document/type-resolver/index.js';
import { aggregationCall } from '../reads/aggregations/call.js';
import type { AggregationMapping } from '../reads/aggregations/declared.js';
import { estimateCost, type CostEstimate, type CostLimits } from './cost/estimate.js';
import { compileTrustedDocuments, type TrustedDocuments } from '../document/trusted/documents.js';
import { DocumentCache, type PreparedDocument } from '../limits/document-cache.js';
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits } from '../limits/settings.js';
import { notHalted, type ExecutionDeadline } from '../limits/deadline.js';

export type { PreparedDocument } from '../limits/document-cache.js';

export interface CompileOptions extends Partial<GraphqlLimits>, Partial<OutputLimits> {
  /** Where query mappings read from (usually `createHttpBackendReader(...)`). */
  readonly reader: BackendReader;
  /** Largest URL-encoded filter of one batched join read before it is split (default 6144). */
  readonly maxFilterBytes?: number;
  /**
   * Parsed/validated query documents, shared by every app of a registry and weighed by parsed size
   * (limits/document-cache.ts). Without one, the app gets its own of the default budget.
   */
  readonly documentCache?: DocumentCache;
  /**
   * The caller's readFilter/projectResponse per collection (SPEC §3.6, `graphql.backend.auth:
   * caller`); leave it out for `auth: service`, which applies no per-caller filter.
   */
  readonly readPolicy?: ReadPolicy;
  /** Called with errors that are masked from the client (bugs, unexpected exceptions), for logging. */
  readonly onError?: (error: unknown, ctx: RequestContext) => void;
  /**
   * Answer joins synchronously where that changes nothing but the cost (default true; see
   * prefetch.ts). False completes every join lazily, for tests and diagnosis.
   */
  readonly prefetchJoins?: boolean;
}

export interface CompiledApp {
  readonly id: string | undefined;
  readonly uri: string;
  readonly enabled: boolean;
  readonly introspection: boolean;
  readonly schema: GraphQLSchema;
  /** Content hash of the app document this was compiled from. */
  readonly version: string;
  readonly settings: EngineSettings;
  /** Report reads and batching in `extensions` (the descriptor's `verbose`, else `graphql.verbose`). */
  readonly verbose: boolean;
  /** The app's allow-list of operations; undefined = any operation. */
  readonly trusted: TrustedDocuments | undefined;
  /** Largest estimated cost of one operation (the descriptor's `maxCost`, else `graphql.maxCost`; `output` is service-wide). */
  readonly maxCost: CostLimits;
  /** What one operation may produce (aliases, output values, response bytes). */
  readonly output: OutputLimits;
  /** Estimated reads and documents of an operation (before anything is read). */
  estimate(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): CostEstimate;
  readonly onError: ((error: unknown, ctx: RequestContext) => void) | undefined;
  /** Parses and validates a query, from the cache when seen before. */
  prepare(query: string): PreparedDocument;
}

/** What resolvers receive as GraphQL context. */
export interface ExecutionContextValue {
  readonly state: RequestState;
  /** Halts completion once `timeoutMs` has passed (limits/deadline.ts). */
  readonly deadline?: ExecutionDeadline;
}

export function appVersion(app: GraphqlApp): string {
  return createHash('sha256').update(JSON.stringify(app)).digest('base64url').slice(0, 22);
}

/**
 * Compiles a (validated) app document. Throws `ValidationError` when the document is not valid,
 * e.g. a stored app from before a validation rule existed.
 */
export function compileApp(app: GraphqlApp, opts: CompileOptions): CompiledApp {
  const limits: GraphqlLimits = {
    defaultDb: opts.defaultDb ?? DEFAULT_LIMITS.defaultDb,
    defaultLimit: opts.defaultLimit ?? DEFAULT_LIMITS.defaultLimit,
    maxLimit: opts.maxLimit ?? DEFAULT_LIMITS.maxLimit,
    maxDepth: opts.maxDepth ?? DEFAULT_LIMITS.maxDepth,
    maxBackendReads: opts.maxBackendReads ?? DEFAULT_LIMITS.maxBackendReads,
    timeoutMs: opts.timeoutMs ?? DEFAULT_LIMITS.timeoutMs,
    introspection: opts.introspection ?? DEFAULT_LIMITS.introspection,
    maxCost: opts.maxCost ?? DEFAULT_LIMITS.maxCost,
    verbose: opts.verbose ?? DEFAULT_LIMITS.verbose,
    aggregations: opts.aggregations ?? DEFAULT_LIMITS.aggregations,
    httpProfile: opts.httpProfile ?? DEFAULT_LIMITS.httpProfile,
  };
  const checked = validateAppWithSchema(app, { defaultDb: limits.defaultDb, maxLimit: limits.maxLimit, aggregations: limits.aggregations });
  if (!checked.ok) throw new ValidationError(checked.problems);
  const { schema } = checked;
  const normalized = checked.app;

  installResolvers(schema, normalized, limits, opts.prefetchJoins !== false);
  installTypeResolvers(schema, normalized.mappings);

  const introspection = limits.introspection && normalized.descriptor.introspection !== false;
  const output: OutputLimits = {
    maxAliases: opts.maxAliases ?? DEFAULT_OUTPUT_LIMITS.maxAliases,
    maxOutput: opts.maxOutput ?? DEFAULT_OUTPUT_LIMITS.maxOutput,
    maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_OUTPUT_LIMITS.maxResponseBytes,
  };
  const rules: ValidationRule[] = [...specifiedRules, depthLimitRule(limits.maxDepth)];
  if (!introspection) rules.push(NoSchemaIntrospectionCustomRule);
  const cache = opts.documentCache ?? new DocumentCache();
  const version = appVersion(app);

  return {
    id: normalized._id,
    uri: normalized.descriptor.uri,
    enabled: normalized.descriptor.enabled,
    introspection,
    schema,
    version,
    settings: { limits, reader: opts.reader, maxFilterBytes: opts.maxFilterBytes ?? 6144, readPolicy: opts.readPolicy },
    onError: opts.onError,
    verbose: normalized.descriptor.verbose ?? limits.verbose,
    trusted: compileTrustedDocuments(normalized.descriptor.trustedDocuments),
    maxCost: { ...limits.maxCost, ...(normalized.descriptor.maxCost ?? {}), output: output.maxOutput },
    output,
    estimate(document, operation, variables) {
      const fragments = new Map<string, FragmentDefinitionNode>();
      for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
      return estimateCost(schema, normalized, limits, operation, fragments, variables);
    },
    prepare(query: string): PreparedDocument {
      // With introspection off, "did you mean" would name the schema's types and fields.
      return cache.prepare(version, query, schema, rules, { maxAliases: output.maxAliases, hideSuggestions: !introspection });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Resolvers

interface EnumMapping {
  readonly toStored: Map<string, unknown>;
  readonly toName: Map<string, string>;
}

function installResolvers(schema: GraphQLSchema, app: GraphqlApp, limits: GraphqlLimits, prefetchJoins: boolean): void {
  const queryType = schema.getQueryType();
  const enumMaps = new Map<string, EnumMapping>();
  for (const [typeName, mappings] of Object.entries(app.mappings)) {
    const type = schema.getType(typeName);
    if (!type || !isEnumType(type)) continue;
    const toStored = new Map<string, unknown>();
    const toName = new Map<string, string>();
    for (const [name, value] of Object.entries(mappings)) {
      toStored.set(name, value);
      toName.set(canonicalKey(value), name);
    }
    enumMaps.set(typeName, { toStored, toName });
  }
  const usesRootDoc = JSON.stringify(app.mappings).includes(`"${ROOT_DOC_ARG}.`);
  // Joins are answered synchronously where that changes nothing but the cost (prefetch.ts). Not
  // with rootDoc: each parent then needs its own copies of the joined documents.
  const prefetch = prefetchJoins && !usesRootDoc;
  const loading = { joins: new Map<GraphQLField<unknown, unknown>, JoinStart<RequestState>>(), all: new Set<GraphQLField<unknown, unknown>>() };
  const prefetcherOf = (state: RequestState, info: GraphQLResolveInfo): Prefetcher<RequestState> => (state.prefetcher ??= new Prefetcher(state, loading, info));

  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    type.isTypeOf ??= notHalted;
    const isRoot = type === queryType;
    const mappings = app.mappings[type.name] ?? {};
    for (const field of Object.values(type.getFields())) {
      const mapping = mappings[field.name];
      let resolve: GraphQLFieldResolver<unknown, ExecutionContextValue> | undefined;
      if (isPlainObject(mapping) && 'stages' in mapping) {
        const call = aggregationCall(app._id ?? app.descriptor.uri, type.name, field.name, mapping as unknown as AggregationMapping, limits.defaultDb);
        const single = !isListType(getNullableType(field.type));
        const internalize = argsInternalizer(field, enumMaps);
        resolve = (source, args, context) => call(source, internalize(args), context.state).then((docs) => (single ? (docs[0] ?? null) : docs));
      } else if (isPlainObject(mapping)) {
        const compiled = compileQueryMapping(`${type.name}.${field.name}`, mapping as unknown as QueryMapping, limits.defaultDb);
        const single = !isListType(getNullableType(field.type));
        const internalize = argsInternalizer(field, enumMaps);
        const fixed = isRoot ? undefined : compileStaticInJoin(compiled, limits, single);
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
        /** What the field resolves to: its value, a promise of it, or a thrown field error. */
        const start: JoinStart<RequestState> = (source, args, state) => {
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
            const pending =
              state.joins.shared(fixed.groupKey, fixed.windowKey, distinctKey) ??
              state.joins.load(
                staticInJoinQuery(fixed, found?.values ?? [fk], found?.valueKeys ?? [distinctKey]),
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
          const read = readWindow(state, r.query);
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
        loading.all.add(field);
        if (!isRoot) loading.joins.set(field, start);
        if (!prefetch) resolve = (source, args, context) => start(source, args, context.state);
        else if (isRoot) {
          resolve = (source, args, context, info) =>
            loading.joins.size === 0 ? start(source, args, context.state) : prefetcherOf(context.state, info).afterLoad(start(source, args, context.state), info);
        }
        else {
          resolve = (source, args, context, info) => {
            const state = context.state;
            const prefetcher = prefetcherOf(state, info);
            const known = prefetcher.answer(info, source);
            return known !== NOT_PREFETCHED ? known : prefetcher.afterLoad(start(source, args, state), info);
          };
        }
      } else if (typeof mapping === 'string') {
        const path = mapping.split('.');
        resolve = usesRootDoc
          ? (source, _args, context) => propagate(context, usesRootDoc, source, readPath(source, path))
          : (source) => readPath(source, path);
      } else if (usesRootDoc && isObjectType(getNamedType(field.type))) {
        const name = field.name;
        resolve = (source, _args, context) =>
          propagate(context, usesRootDoc, source, source !== null && typeof source === 'object' ? (source as Record<string, unknown>)[name] : undefined);
      }
      const enumOut = outputEnumMapper(field.type, enumMaps);
      if (enumOut) {
        const inner = resolve;
        const name = field.name;
        resolve = (source, args, context, info) => {
          const value = inner
            ? inner(source, args, context, info)
            : source !== null && typeof source === 'object'
              ? (source as Record<string, unknown>)[name]
              : undefined;
          return value instanceof Promise ? value.then(enumOut) : enumOut(value);
        };
      }
      if (resolve) field.resolve = resolve as GraphQLFieldResolver<unknown, unknown>;
    }
  }
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

/** Enum arguments arrive as value names; mappings want the stored values. */
function argsInternalizer(
  field: GraphQLField<unknown, unknown>,
  enumMaps: Map<string, EnumMapping>,
): (args: Record<string, unknown>) => Record<string, unknown> {
  if (enumMaps.size === 0 || !field.args.some((a) => involvesMappedEnum(a.type, enumMaps, new Set()))) return (args) => args;
  const convert = (type: GraphQLInputType, value: unknown): unknown => {
    if (value === null || value === undefined) return value;
    const t = getNullableType(type);
    if (isListType(t)) return Array.isArray(value) ? value.map((v) => convert(t.ofType, v)) : convert(t.ofType, value);
    if (isEnumType(t)) {
      const m = enumMaps.get(t.name);
      return m && typeof value === 'string' && m.toStored.has(value) ? m.toStored.get(value) : value;
    }
    if (isInputObjectType(t) && isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      const fields = t.getFields();
      for (const [k, v] of Object.entries(value)) out[k] = fields[k] ? convert(fields[k].type, v) : v;
      return out;
    }
    return value;
  };
  const defs = new Map<string, GraphQLArgument>(field.args.map((a) => [a.name, a]));
  return (args) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) {
      const def = defs.get(k);
      out[k] = def ? convert(def.type, v) : v;
    }
    return out;
  };
}

function involvesMappedEnum(type: GraphQLInputType, enumMaps: Map<string, EnumMapping>, seen: Set<string>): boolean {
  const named = getNamedType(type);
  if (isEnumType(named)) return enumMaps.has(named.name);
  if (isInputObjectType(named)) {
    if (seen.has(named.name)) return false;
    seen.add(named.name);
    return Object.values(named.getFields()).some((f) => involvesMappedEnum(f.type, enumMaps, seen));
  }
  return false;
}

/** Stored enum values → value names, for fields whose type is a mapped enum (or a list of one). */
function outputEnumMapper(type: GraphQLOutputType, enumMaps: Map<string, EnumMapping>): ((value: unknown) => unknown) | undefined {
  const named = getNamedType(type);
  if (!isEnumType(named)) return undefined;
  const m = enumMaps.get(named.name);
  if (!m) return undefined;
  const map = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(map);
    if (value === null || value === undefined) return value;
    return m.toName.get(canonicalKey(value)) ?? value;
  };
  return map;
}
