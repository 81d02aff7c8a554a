/**
 * App document → executable app: the schema is built once per app version, resolvers are derived
 * from the mappings (resolvers.ts), and parsed + validated query documents are cached (LRU).
 */
import { createHash } from 'node:crypto';
import {
  Kind,
  NoSchemaIntrospectionCustomRule,
  specifiedRules,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { ValidationError } from '../../errors.js';
import type { GraphqlApp } from '../app-document.js';
import { validateAppWithSchema } from '../document/validate-app.js';
import { installTypeResolvers } from '../document/type-resolver/index.js';
import { compileTrustedDocuments, type TrustedDocuments } from '../document/trusted/documents.js';
import type { EngineSettings } from '../reads/backend-reads.js';
import { depthLimitRule } from '../limits/depth-limit.js';
import { DocumentCache, type PreparedDocument } from '../limits/document-cache.js';
import { limitsOf, type BackendReader, type BackendWriter, type BeforeWrite, type GraphqlLimits, type ReadPolicy, type RequestContext, type WriteObserver, type WritePolicy } from '../types.js';
import { compileWrites } from '../writes/compile.js';
import { checkMutationPlan } from '../writes/plan.js';
import { estimateCost, type CostEstimate, type CostLimits } from './cost/estimate.js';
import { installResolvers } from './resolvers.js';
import { compiledEngine } from './engines/compiled.js';
import { directEngine } from './engines/direct.js';
import type { Engine } from './engines/engine.js';
import { exampleOperation, type ExampleOperation } from './example-operation.js';

/** The limits (any left out: the defaults), taken whole (e.g. the config's `graphql` section), and the engine's wiring. */
export interface CompileOptions extends Partial<GraphqlLimits> {
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
  /** Where mutations write (`createHttpBackendWriter(...)`); without one, mutation fields fail with BACKEND_UNAVAILABLE. */
  readonly writer?: BackendWriter;
  /** The ACL's decision per backend write (`auth: caller`); leave it out for `auth: service`. */
  readonly writePolicy?: WritePolicy;
  /** Told of every backend write (the webhooks' exchanges). */
  readonly onWrite?: WriteObserver;
  /** Reads a single-document write's state before it is sent (subscriptions' listeners). */
  readonly beforeWrite?: BeforeWrite;
  /** Called with errors that are masked from the client (bugs, unexpected exceptions), for logging. */
  readonly onError?: (error: unknown, ctx: RequestContext) => void;
  /**
   * Answer joins synchronously where that changes nothing but the cost (default true; see
   * reads/prefetch.ts). False completes every join lazily, for tests and diagnosis.
   */
  readonly prefetchJoins?: boolean;
  /**
   * Answer documents of reads and built-in scalars without GraphQL execution (default true; see
   * compile/engines/direct-plan.ts). False leaves them to the prefetcher and graphql-jit, for tests of those.
   */
  readonly directExecution?: boolean;
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
  /** The operation the app's GraphiQL page opens on (example-operation.ts). */
  readonly example: ExampleOperation;
  /** The app's allow-list of operations; undefined = any operation. */
  readonly trusted: TrustedDocuments | undefined;
  /** Largest estimated cost of one operation (the descriptor's `maxCost`, else `graphql.maxCost`; `output` is service-wide). */
  readonly maxCost: CostLimits;
  /** The descriptor's `cache.maxAgeSeconds`: whole query answers kept in the response cache that long at most (serve/answer-cache.ts); undefined: not kept. */
  readonly answerMaxAgeSeconds: number | undefined;
  /** What is wrong with a mutation before its first write (write count, bulk size, argument values); empty when nothing. */
  checkMutation(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): GraphQLError[];
  /** Estimated reads and documents of an operation (before anything is read). */
  estimate(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): CostEstimate;
  readonly onError: ((error: unknown, ctx: RequestContext) => void) | undefined;
  /** Parses and validates a query, from the cache when seen before. */
  prepare(query: string): PreparedDocument;
  /**
   * The engines that may plan a query before graphql-js, in the order asked (engines/engine.ts):
   * each holds what this app's resolvers said it may answer and its plans of cached documents.
   */
  readonly engines: readonly Engine[];
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  return fragments;
}

export function appVersion(app: GraphqlApp): string {
  return createHash('sha256').update(JSON.stringify(app)).digest('base64url').slice(0, 22);
}

/**
 * Compiles a (validated) app document. Throws `ValidationError` when the document is not valid,
 * e.g. a stored app from before a validation rule existed.
 */
export function compileApp(app: GraphqlApp, opts: CompileOptions): CompiledApp {
  const limits = limitsOf(opts);

  const checked = validateAppWithSchema(app, { defaultDb: limits.defaultDb, maxLimit: limits.maxLimit, aggregations: limits.aggregations });
  if (!checked.ok) throw new ValidationError(checked.problems);
  const { schema } = checked;
  const normalized = checked.app;

  const writes = compileWrites(schema, normalized, limits.defaultDb);
  const facts = installResolvers(schema, normalized, limits, { prefetchJoins: opts.prefetchJoins !== false, directExecution: opts.directExecution !== false }, writes);
  installTypeResolvers(schema, normalized.mappings);

  const introspection = limits.introspection && normalized.descriptor.introspection !== false;

  const rules: ValidationRule[] = [...specifiedRules, depthLimitRule(limits.maxDepth)];
  if (!introspection) rules.push(NoSchemaIntrospectionCustomRule);
  const cache = opts.documentCache ?? new DocumentCache();
  /** The estimate of each operation without variables (issue 39: walked per request before). */
  const constantCosts = new WeakMap<OperationDefinitionNode, CostEstimate>();
  const version = appVersion(app);
  const costContext = { schema, app: normalized, limits };
  const mutationType = schema.getMutationType();
  const mutations = mutationType ? { type: mutationType, writes, limits } : undefined;

  return {
    id: normalized._id,
    uri: normalized.descriptor.uri,
    enabled: normalized.descriptor.enabled,
    introspection,
    schema,
    version,
    settings: {
      limits,
      reader: opts.reader,
      maxFilterBytes: opts.maxFilterBytes ?? 6144,
      readPolicy: opts.readPolicy,
      writer: opts.writer,
      writePolicy: opts.writePolicy,
      onWrite: opts.onWrite,
      beforeWrite: opts.beforeWrite,
      appUri: normalized.descriptor.uri,
    },
    onError: opts.onError,
    verbose: normalized.descriptor.verbose ?? limits.verbose,
    trusted: compileTrustedDocuments(normalized.descriptor.trustedDocuments),
    example: exampleOperation(normalized, schema),
    maxCost: { ...limits.maxCost, ...(normalized.descriptor.maxCost ?? {}), output: limits.maxCost.output },
    answerMaxAgeSeconds: normalized.descriptor.cache?.maxAgeSeconds,
    estimate(document, operation, variables) {
      // An operation without variables always costs the same: estimated once per cached document.
      if (operation.variableDefinitions !== undefined && operation.variableDefinitions.length > 0) {
        return estimateCost(costContext, operation, fragmentsOf(document), variables);
      }
      let cost = constantCosts.get(operation);
      if (cost === undefined) {
        cost = estimateCost(costContext, operation, fragmentsOf(document), variables);
        constantCosts.set(operation, cost);
      }
      return cost;
    },
    checkMutation(document, operation, variables) {
      return mutations ? checkMutationPlan(mutations, operation, fragmentsOf(document), variables) : [];
    },
    // Without direct fields (directExecution off, rootDoc, no prefetching) the direct engine plans nothing.
    engines: facts.direct.size > 0 ? [directEngine(schema, facts.direct), compiledEngine(schema, facts.queryMapped)] : [compiledEngine(schema, facts.queryMapped)],
    prepare(query: string): PreparedDocument {
      // With introspection off, "did you mean" would name the schema's types and fields.
      return cache.prepare(version, query, schema, rules, { maxAliases: limits.maxAliases, hideSuggestions: !introspection });
    },
  };
}
