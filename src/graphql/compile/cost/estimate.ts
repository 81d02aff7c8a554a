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

/** What the estimate reads of a compiled app: its schema, its (normalized) document, its limits. */
export interface CostContext {
  readonly schema: GraphQLSchema;
  readonly app: GraphqlApp;
  readonly limits: GraphqlLimits;
}

export function estimateCost(
  context: CostContext,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  /** The operation's variables, coerced (graphql-js `getVariableValues`). */
  variables: Record<string, unknown>,
): CostEstimate {
  const { schema } = context;
  const root = operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  // A mutation's root mappings are writes, a subscription's are changes: no read window of their own.
  const walk = new CostWalk(context, fragments, variables, operation.operation !== 'query');
  if (root) walk.selections(operation.selectionSet, root, 1, true, new Set());
  return walk.cost;
}

/** One walk of an operation's selections (fragments expanded), adding up its cost. */
class CostWalk {
  readonly cost: CostEstimate = { reads: 0, documents: 0, output: 0 };
  private visited = 0;

  constructor(
    private readonly context: CostContext,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
    private readonly rootNotRead: boolean,
  ) {}

  private mappingsOf(type: GraphQLCompositeType): GraphQLObjectType[] {
    return isAbstractType(type) ? [...this.context.schema.getPossibleTypes(type)] : isObjectType(type) ? [type] : [];
  }

  selections(selections: SelectionSetNode, type: GraphQLCompositeType, parents: number, isRoot: boolean, seen: ReadonlySet<string>): void {
    const { schema } = this.context;
    const cost = this.cost;
    for (const selection of selections.selections) {
      if (++this.visited > MAX_FIELDS) {
        cost.reads = Infinity;
        cost.documents = Infinity;
        cost.output = Infinity;
        return;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const cond = selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) as GraphQLCompositeType | undefined) : type;
        if (cond) this.selections(selection.selectionSet, cond, parents, isRoot, seen);
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        const fragment = this.fragments.get(name);
        if (!fragment || seen.has(name)) continue;
        const cond = schema.getType(fragment.typeCondition.name.value) as GraphQLCompositeType | undefined;
        if (cond) this.selections(fragment.selectionSet, cond, parents, isRoot, new Set([...seen, name]));
        continue;
      }
      this.field(selection, type, parents, isRoot, seen);
    }
  }

  private field(node: FieldNode, type: GraphQLCompositeType, parents: number, isRoot: boolean, seen: ReadonlySet<string>): void {
    const cost = this.cost;
    const limits = this.context.limits;
    cost.output += parents;
    // Over an abstract type the costliest implementation counts.
    let window = 0;
    let reads = 0;
    let documents = 0;
    let childType: GraphQLCompositeType | undefined;
    let mapped = false;
    let storedList = false;
    for (const object of this.mappingsOf(type)) {
      const def = object.getFields()[node.name.value];
      if (!def) continue;
      childType = getNamedType(def.type) as GraphQLCompositeType;
      const mapping = isRoot && this.rootNotRead ? undefined : this.context.app.mappings[object.name]?.[node.name.value];
      if (!isPlainObject(mapping)) {
        if (isListType(getNullableType(def.type))) storedList = true;
        continue;
      }
      mapped = true;
      const read = this.mappedRead(mapping, def, node, parents, isRoot);
      window = Math.max(window, read.window);
      reads = Math.max(reads, read.reads);
      documents = Math.max(documents, read.documents);
    }
    let below = parents;
    if (isRoot && this.rootNotRead && childType !== undefined && !storedList && !isLeafType(childType)) {
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
    if (node.selectionSet && childType) this.selections(node.selectionSet, childType, below, false, seen);
  }

  /** The window, reads and documents of one mapped field under `parents` objects. */
  private mappedRead(mapping: Record<string, unknown>, def: GraphQLField<unknown, unknown>, node: FieldNode, parents: number, isRoot: boolean): { window: number; reads: number; documents: number } {
    const single = !isListType(getNullableType(def.type));
    if ('stages' in mapping) {
      const window = single ? 1 : AGGREGATION_WINDOW;
      return { window, reads: parents, documents: parents * window };
    }
    const args = isArgRef(mapping.limit) || isArgRef(mapping.skip) ? argumentsOf(def, node, this.variables) : {};
    const window = windowOf(mapping, args, this.context.limits, single);
    const skip = skipOf(mapping, args);
    if (isRoot) {
      const plan = planPages(skip, window);
      return { window, reads: plan.pages, documents: plan.pagesize * plan.pages };
    }
    const documents = parents * (skip + window);
    return { window, reads: Math.max(1, Math.ceil(documents / BACKEND_MAX_PAGESIZE)), documents };
  }
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
