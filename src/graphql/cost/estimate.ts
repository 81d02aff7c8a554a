/**
 * The cost of an operation, estimated from the document before anything is read: how many backend
 * reads and how many documents it may need at most. Each mapped field's window comes from its
 * mapping (a literal `limit`, an `$arg` taken from the call's arguments or defaults, else
 * `defaultLimit`; one for a non-list field), multiplied along the path by its parents' windows.
 * Joins are batched, so a join field costs one read per 1000 documents of all its parents
 * together; an aggregation mapping costs one read per parent (its variables differ per parent).
 */
import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  isAbstractType,
  isListType,
  isObjectType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { argRefParts, isArgRef, isPlainObject, type GraphqlApp } from '../app-document.js';
import { readPath } from '../paths.js';
import { BACKEND_MAX_PAGESIZE, type GraphqlLimits } from '../types.js';

export interface CostEstimate {
  /** Backend reads the operation may need at most. */
  reads: number;
  /** Documents it may read at most. */
  documents: number;
}

export interface CostLimits {
  readonly reads: number;
  readonly documents: number;
}

/** Documents one aggregation call may return (one page of the backend's largest size). */
export const AGGREGATION_WINDOW = BACKEND_MAX_PAGESIZE;

/** Stops the walk on absurd documents (fragments are expanded): the estimate is then "too much". */
const MAX_FIELDS = 20_000;

export function estimateCost(
  schema: GraphQLSchema,
  app: GraphqlApp,
  limits: GraphqlLimits,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): CostEstimate {
  const cost: CostEstimate = { reads: 0, documents: 0 };
  const root = operation.operation === 'query' ? schema.getQueryType() : undefined;
  if (!root) return cost;
  let visited = 0;

  const mappingsOf = (type: GraphQLCompositeType): GraphQLObjectType[] =>
    isAbstractType(type) ? [...schema.getPossibleTypes(type)] : isObjectType(type) ? [type] : [];

  const walk = (selections: SelectionSetNode, type: GraphQLCompositeType, parents: number, isRoot: boolean, seen: ReadonlySet<string>): void => {
    for (const selection of selections.selections) {
      if (++visited > MAX_FIELDS) {
        cost.reads = Infinity;
        cost.documents = Infinity;
        return;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const cond = selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) as GraphQLCompositeType | undefined) : type;
        if (cond) walk(selection.selectionSet, cond, parents, isRoot, seen);
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || seen.has(name)) continue;
        const cond = schema.getType(fragment.typeCondition.name.value) as GraphQLCompositeType | undefined;
        if (cond) walk(fragment.selectionSet, cond, parents, isRoot, new Set([...seen, name]));
        continue;
      }
      field(selection, type, parents, isRoot, seen);
    }
  };

  const field = (node: FieldNode, type: GraphQLCompositeType, parents: number, isRoot: boolean, seen: ReadonlySet<string>): void => {
    // Over an abstract type the costliest implementation counts.
    let window = 0;
    let reads = 0;
    let childType: GraphQLCompositeType | undefined;
    let mapped = false;
    for (const object of mappingsOf(type)) {
      const def = object.getFields()[node.name.value];
      if (!def) continue;
      childType = getNamedType(def.type) as GraphQLCompositeType;
      const mapping = app.mappings[object.name]?.[node.name.value];
      if (!isPlainObject(mapping)) continue;
      mapped = true;
      const single = !isListType(getNullableType(def.type));
      const w = 'stages' in mapping ? (single ? 1 : AGGREGATION_WINDOW) : windowOf(mapping, def, node, variables, limits, single);
      const total = parents * w;
      const r = 'stages' in mapping ? parents : isRoot ? 1 : Math.max(1, Math.ceil(total / BACKEND_MAX_PAGESIZE));
      window = Math.max(window, w);
      reads = Math.max(reads, r);
    }
    let below = parents;
    if (mapped) {
      cost.reads += reads;
      cost.documents += parents * window;
      below = parents * window;
    }
    if (node.selectionSet && childType) walk(node.selectionSet, childType, below, false, seen);
  };

  walk(operation.selectionSet, root, 1, true, new Set());
  return cost;
}

function windowOf(
  mapping: Record<string, unknown>,
  def: GraphQLField<unknown, unknown>,
  node: FieldNode,
  variables: Record<string, unknown>,
  limits: GraphqlLimits,
  single: boolean,
): number {
  if (single) return 1;
  let limit: unknown = mapping.limit;
  if (isArgRef(limit)) {
    const { path, hasDefault, defaultValue } = argRefParts(limit);
    let args: Record<string, unknown> = {};
    try {
      args = getArgumentValues(def, node, variables);
    } catch {
      // Bad arguments fail validation or execution later; estimate with the defaults.
    }
    const v = readPath(args, path);
    limit = v === undefined || v === null ? (hasDefault ? defaultValue : undefined) : v;
  }
  if (typeof limit !== 'number' || !Number.isFinite(limit) || limit < 0) return limits.defaultLimit;
  return limit === 0 || limit > limits.maxLimit ? limits.maxLimit : limit;
}
