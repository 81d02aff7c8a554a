/**
 * The direct engine (issue 39): a query whose every field is a read of the app's mappings, a
 * built-in scalar or `__typename` is answered without GraphQL execution (direct-plan.ts plans it,
 * direct-run.ts runs it). Its plans are kept per cached document, in the app's own engine: a
 * document belongs to one app version (limits/document-cache.ts keys it by version).
 */
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { planRoot, type DirectFields } from './direct-plan.js';
import { DirectPlan } from './direct-run.js';
import type { Engine } from './engine.js';

/** Answers given up before a document is left to graphql-jit (its data does not fit the plan: failed reads do not count). */
const MAX_GIVE_UPS = 3;

export interface DirectEngine extends Engine {
  readonly name: 'direct';
  plan(document: DocumentNode, operation: OperationDefinitionNode): DirectPlan | undefined;
}

/** The direct engine of one app; `fields` is what its resolvers said may be answered directly. */
export function directEngine(schema: GraphQLSchema, fields: DirectFields): DirectEngine {
  const plans = new WeakMap<DocumentNode, Map<string, DirectPlan | null>>();
  return {
    name: 'direct',
    /** The plan of an operation of a cached document (made on first use), or undefined when it has none. */
    plan(document, operation) {
      let byOperation = plans.get(document);
      if (byOperation === undefined) {
        byOperation = new Map();
        plans.set(document, byOperation);
      }
      const key = operation.name?.value ?? '';
      let plan = byOperation.get(key);
      if (plan === undefined) {
        const root = planRoot(schema, fields, operation);
        plan = root === undefined ? null : new DirectPlan(root);
        byOperation.set(key, plan);
      }
      if (plan !== null && plan.gaveUp >= MAX_GIVE_UPS) return undefined;
      return plan ?? undefined;
    },
  };
}
