/**
 * Compiled execution (issue 39): a query document, once parsed and validated, is compiled by
 * graphql-jit into JavaScript that resolves and completes its fields without graphql-js's
 * per-field interpretation (arguments computed for every field, a resolve info per field, promise
 * bookkeeping per object). Measured 3–5× less CPU than graphql-js's `execute` on the bench shapes,
 * same resolvers, same reads (docs/decisions.md).
 *
 * It is used only where it gives exactly what graphql-js gives, and graphql-js keeps the rest:
 * - queries only, whose estimated output stays at most PLANNED_MAX_OUTPUT values: graphql-jit
 *   takes no default field resolver, so the clock-reading one (limits/deadline.ts) that halts a
 *   long synchronous completion does not run; this bound keeps such a completion short;
 * - documents without directives: graphql-jit rewrites the field nodes of `@skip`/`@include`,
 *   and the prefetcher (reads/prefetch.ts) recognizes fields by their nodes;
 * - documents whose every list field is a query mapping's window: a list stored inside a document
 *   is bounded at run time by the output budget the clock-reading resolver spends, which compiled
 *   execution does not run;
 * - answers without errors: when the compiled run reports any error, the request is executed
 *   again by graphql-js over the reads the first run made (RequestState.replay: no read is sent
 *   twice), so every error, its message, path, locations and extensions are graphql-js's own.
 */
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { BREAK, getNullableType, isListType, TypeInfo, visit, visitWithTypeInfo, type DocumentNode, type ExecutionResult, type GraphQLField, type GraphQLSchema } from 'graphql';
import type { ExecutionDeadline } from '../../limits/deadline.js';
import type { RequestState } from '../../reads/request-state.js';
import type { ExecutionContextValue } from '../resolvers.js';
import { GAVE_UP, type Engine, type EnginePlan } from './engine.js';

type QueryMapped = ReadonlySet<GraphQLField<unknown, unknown>>;

/** An operation compiled by graphql-jit; it gives up on any error, which graphql-js then words. */
class CompiledPlan implements EnginePlan {
  constructor(private readonly compiled: CompiledQuery) {}

  async run(state: RequestState, deadline: ExecutionDeadline, variables: Readonly<Record<string, unknown>> | undefined): Promise<ExecutionResult | typeof GAVE_UP> {
    const first = (await this.compiled.query(undefined, { state, deadline } satisfies ExecutionContextValue, variables ?? {})) as ExecutionResult;
    if (first.errors === undefined || first.errors.length === 0 || state.signal.aborted) return first;
    return GAVE_UP;
  }
}

/**
 * The compiled engine of one app: the compiled form of an operation of a cached document
 * (compiled on first use), or undefined when graphql-js must run it. A document belongs to one
 * app version (limits/document-cache.ts keys it by version), hence to this app's schema.
 */
export function compiledEngine(schema: GraphQLSchema, queryMapped: QueryMapped): Engine {
  /** document → operation name → its compiled form, or null where graphql-js runs it. */
  const compiledByDocument = new WeakMap<DocumentNode, Map<string, CompiledPlan | null>>();
  return {
    name: 'compiled',
    plan(document, _operation, operationName) {
      let byOperation = compiledByDocument.get(document);
      if (byOperation === undefined) {
        byOperation = new Map();
        compiledByDocument.set(document, byOperation);
      }
      const key = operationName ?? '';
      let compiled = byOperation.get(key);
      if (compiled === undefined) {
        compiled = hasDirectives(document) || selectsStoredList(schema, queryMapped, document) ? null : compile(schema, document, operationName);
        byOperation.set(key, compiled);
      }
      return compiled ?? undefined;
    },
  };
}

function compile(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): CompiledPlan | null {
  try {
    const compiled = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true });
    return isCompiledQuery(compiled) ? new CompiledPlan(compiled) : null;
  } catch {
    return null; // anything graphql-jit cannot compile is graphql-js's
  }
}

function hasDirectives(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive() {
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** Whether the document selects a list field that is not a query mapping's window (a stored list, an aggregation). */
function selectsStoredList(schema: GraphQLSchema, queryMapped: QueryMapped, document: DocumentNode): boolean {
  const typeInfo = new TypeInfo(schema);
  let found = false;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const def = typeInfo.getFieldDef();
        if (def && isListType(getNullableType(def.type)) && !queryMapped.has(def as GraphQLField<unknown, unknown>)) {
          found = true;
          return BREAK;
        }
        return undefined;
      },
    }),
  );
  return found;
}
