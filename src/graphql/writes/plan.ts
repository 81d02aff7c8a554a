/**
 * A mutation checked before its first write (SPEC §6.4, issue 27 item 4): the root fields it will
 * run (fragments spread, `@skip`/`@include` honoured) each make one backend write, at most
 * `graphql.maxBackendWrites`; the documents its bulk inserts carry, at most `graphql.maxBulkWrite`
 * in all; and every argument value a write would carry is a plain value (no `$`-key, no dotted
 * key, not nested past the bound), and the ids and `find` it would act on are a plain path
 * segment and free of null arguments (run.ts `targetRefusal`, issue 34). Any of these is a 400
 * with nothing written.
 */
import {
  getArgumentValues,
  getDirectiveValues,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { GraphqlLimits } from '../types.js';
import { targetRefusal, type CompiledWrite } from './run.js';
import { argumentValueProblem } from './values.js';

/** An app's mutations as the checks see them: the Mutation type, each field's compiled write, the write limits. */
export interface AppMutations {
  readonly type: GraphQLObjectType;
  readonly writes: ReadonlyMap<string, CompiledWrite>;
  readonly limits: Pick<GraphqlLimits, 'maxBackendWrites' | 'maxBulkWrite'>;
}

export function checkMutationPlan(
  mutations: AppMutations,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): GraphQLError[] {
  const { type: mutationType, writes, limits } = mutations;
  const fields: FieldNode[] = [];
  collectRootFields(operation.selectionSet, fragments, variables, fields, new Set());
  const errors: GraphQLError[] = [];
  let writeCount = 0;
  let bulkDocuments = 0;
  for (const node of fields) {
    const def = mutationType.getFields()[node.name.value];
    const write = writes.get(node.name.value);
    if (!def || !write) continue;
    writeCount++;
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(def, node, variables);
    } catch {
      continue; // graphql-js reports it as the field's error
    }
    const name = node.alias?.value ?? node.name.value;
    for (const [arg, value] of Object.entries(args)) {
      const problem = argumentValueProblem(value, arg);
      if (problem !== undefined) errors.push(new GraphQLError(`${name}: argument ${problem}`, { nodes: node, extensions: { code: 'BAD_USER_INPUT' } }));
    }
    // An id that is no plain path segment, a null in find: refused before any field writes (issue 34).
    const refusal = targetRefusal(write, args);
    if (refusal) errors.push(new GraphQLError(`${name}: ${refusal.message}`, { nodes: node, extensions: refusal.extensions }));
    if (write.kind === 'insertMany') {
      const ref = (write.mapping.insert as { $arg: string }).$arg;
      const list = args[ref];
      if (Array.isArray(list)) bulkDocuments += list.length;
    }
  }
  if (writeCount > limits.maxBackendWrites) {
    errors.push(
      new GraphQLError(`this mutation needs ${writeCount} backend writes; at most ${limits.maxBackendWrites} are allowed per request (graphql.maxBackendWrites); send fewer mutation fields`, {
        extensions: { code: 'TOO_MANY_BACKEND_WRITES', writes: writeCount, maxBackendWrites: limits.maxBackendWrites },
      }),
    );
  }
  if (bulkDocuments > limits.maxBulkWrite) {
    errors.push(
      new GraphQLError(`this mutation writes ${bulkDocuments} documents in bulk; at most ${limits.maxBulkWrite} are allowed per request (graphql.maxBulkWrite); split it into several requests`, {
        extensions: { code: 'BULK_WRITE_TOO_LARGE', documents: bulkDocuments, maxBulkWrite: limits.maxBulkWrite },
      }),
    );
  }
  return errors;
}

function collectRootFields(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, variables: Record<string, unknown>, out: FieldNode[], spread: Set<string>): void {
  for (const selection of set.selections) {
    if (!included(selection, variables)) continue;
    if (selection.kind === Kind.FIELD) {
      if (!selection.name.value.startsWith('__')) out.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collectRootFields(selection.selectionSet, fragments, variables, out, spread);
    } else {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      if (!fragment || spread.has(name)) continue;
      spread.add(name);
      collectRootFields(fragment.selectionSet, fragments, variables, out, spread);
    }
  }
}

function included(node: Parameters<typeof getDirectiveValues>[1], variables: Record<string, unknown>): boolean {
  const skip = getDirectiveValues(GraphQLSkipDirective, node, variables);
  if (skip?.if === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, node, variables);
  return include?.if !== false;
}
