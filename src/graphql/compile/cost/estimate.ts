/**
 * The cost of an operation, estimated from the document before anything is read: how many backend
 * reads and documents it may need at most, and how many values its answer may hold. Each mapped
 * field's window comes from its mapping (a literal `limit`, an `$arg` taken from the call's
 * arguments, else `defaultLimit`; one for a non-list field), multiplied along the path by its
 * parents' windows. Arguments are read with the operation's variables already coerced (their
 * defaults and input-field defaults applied), so a variable's default costs what the literal does.
 * Documents count what is read, not only what is shown: a root field reads the page(s) covering
 * `skip`..`skip + limit`, a join reads `skip + limit` documents per parent. Joins are batched, so
 * a join field costs one read per 1000 documents of all its parents together; an aggregation
 * mapping costs one read per parent (its variables differ per parent). Output counts every
 * selected field (aliases and `__typename` included) once per object it is selected on: what
 * graphql-js completes and the response holds. A list field with no mapping is a list stored
 * inside the document: its items are counted as `storedListItems` per parent (the estimate cannot
 * know a stored length; the output budget stops a longer list while the answer is built, issue 34).
 * A mutation is estimated too, before its first write: its root fields are writes (not reads);
 * one answering an object reads that document back (one read, one document: SPEC §6.4's
 * read-back, or the read before a delete), one answering ids or a count reads nothing, and what
 * their selections join is costed as in a query (issue 53: a rate limit under `units: cost`
 * charges a mutation what the same selection costs as a query). A subscription is estimated per
 * event: its root field is the change's document (one read, one document, the re-read by `_id`)
 * and its selection's joins are costed as in a query.
 */
import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  isAbstractType,
  isLeafType,
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
import { argRefParts, isArgRef, type GraphqlApp } from '../../app-document.js';
import { isPlainObject } from '../../../util/objects.js';
import { planPages } from '../../reads/paging.js';
import { readPath } from '../../values/paths.js';
import { BACKEND_MAX_PAGESIZE, type GraphqlLimits } from '../../types.js';

export interface CostEstimate {
  /** Backend reads the operation may need at most. */
  reads: number;
  /** Documents it may read at most. */
  documents: number;
  /** Values (fields of every object, aliases included) its answer may hold at most. */
  output: number;
}

export interface CostLimits {
  readonly reads: number;
  readonly documents: number;
  readonly output: number;
}

/** Documents one aggregation call may return (one page of the backend's largest size). */
const AGGREGATION_WINDOW = BACKEND_MAX_PAGESIZE;

/** Stops the walk on absurd documents (fragments are expanded): the estimate is then "too much". */
const MAX_FIELDS = 20_000;

export function estimateCost(
  schema: GraphQLSchema,
  app: GraphqlApp,
  limits: GraphqlLimits,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  /** The operation's variables, coerced (graphql-js `getVariableValues`). */
  variables: Record<string, unknown>,
): CostEstimate {
  const cost: CostEstimate = { reads: 0, documents: 0, output: 0 };
  const root =
    operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return cost;
  // A mutation's root mappings are writes, a subscription's are changes: no read window of their own.
  const rootNotRead = operation.operation !== 'query';
  let visited = 0;

  const mappingsOf = (type: GraphQLCompositeType): GraphQLObjectType[] =>
    isAbstractType(type) ? [...schema.getPossibleTypes(type)] : isObjectType(type) ? [type] : [];

  const walk = (selections: SelectionSetNode, type: GraphQLCompositeType, parents: number, isRoot: boolean, seen: ReadonlySet<string>): void => {
    for (const selection of selections.selections) {
      if (++visited > MAX_FIELDS) {
        cost.reads = Infinity;
        cost.documents = Infinity;
        cost.output = Infinity;
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
    cost.output += parents;
    // Over an abstract type the costliest implementation counts.
    let window = 0;
    let reads = 0;
    let documents = 0;
    let childType: GraphQLCompositeType | undefined;
    let mapped = false;
    let storedList = false;
    for (const object of mappingsOf(type)) {
      const def = object.getFields()[node.name.value];
      if (!def) continue;
      childType = getNamedType(def.type) as GraphQLCompositeType;
      const mapping = isRoot && rootNotRead ? undefined : app.mappings[object.name]?.[node.name.value];
      if (!isPlainObject(mapping)) {
        if (isListType(getNullableType(def.type))) storedList = true;
        continue;
      }
      mapped = true;
      const single = !isListType(getNullableType(def.type));
      let w: number;
      let r: number;
      let d: number;
      if ('stages' in mapping) {
        w = single ? 1 : AGGREGATION_WINDOW;
        r = parents;
        d = parents * w;
      } else {
        const args = isArgRef(mapping.limit) || isArgRef(mapping.skip) ? argumentsOf(def, node, variables) : {};
        w = windowOf(mapping, args, limits, single);
        const skip = skipOf(mapping, args);
        if (isRoot) {
          const plan = planPages(skip, w);
          r = plan.pages;
          d = plan.pagesize * plan.pages;
        } else {
          d = parents * (skip + w);
          r = Math.max(1, Math.ceil(d / BACKEND_MAX_PAGESIZE));
        }
      }
      window = Math.max(window, w);
      reads = Math.max(reads, r);
      documents = Math.max(documents, d);
    }
    let below = parents;
    if (isRoot && rootNotRead && childType !== undefined && !storedList && !isLeafType(childType)) {
      // The one document a write reads back (or a delete reads first), or a change's re-read.
      cost.reads += 1;
      cost.documents += 1;
    } else if (mapped) {
      cost.reads += reads;
      cost.documents += documents;
      below = parents * window;
    } else if (storedList) {
      // Its items are values of the answer, and each is an object its selection is asked on.
      cost.output += parents * limits.storedListItems;
      below = parents * limits.storedListItems;
    }
    if (node.selectionSet && childType) walk(node.selectionSet, childType, below, false, seen);
  };

  walk(operation.selectionSet, root, 1, true, new Set());
  return cost;
}

/** The field's arguments with the coerced variables; bad arguments fail later, so then none. */
function argumentsOf(def: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): Record<string, unknown> {
  try {
    return getArgumentValues(def, node, variables);
  } catch {
    return {};
  }
}

function argValue(spec: unknown, args: Record<string, unknown>): unknown {
  if (!isArgRef(spec)) return spec;
  const { path, hasDefault, defaultValue } = argRefParts(spec);
  const v = readPath(args, path);
  return v === undefined || v === null ? (hasDefault ? defaultValue : undefined) : v;
}

function windowOf(mapping: Record<string, unknown>, args: Record<string, unknown>, limits: GraphqlLimits, single: boolean): number {
  if (single) return 1;
  const limit = argValue(mapping.limit, args);
  if (typeof limit !== 'number' || !Number.isFinite(limit) || limit < 0) return limits.defaultLimit;
  return limit === 0 || limit > limits.maxLimit ? limits.maxLimit : Math.ceil(limit);
}

/** Documents skipped before the window (a bad skip is a field error later: none). */
function skipOf(mapping: Record<string, unknown>, args: Record<string, unknown>): number {
  const skip = argValue(mapping.skip, args);
  return typeof skip === 'number' && Number.isSafeInteger(skip) && skip > 0 ? skip : 0;
}
