/**
 * Direct execution (issue 39), the plan: a query document whose every field is a read of the
 * app's mappings (a root window or a `$fk` join), a built-in scalar read from the document (its
 * own property or a mapped dot path) or `__typename` is answered without GraphQL execution: the
 * same reads, started in the order the prefetcher starts them (reads/prefetch.ts), then the answer
 * built from the documents in one synchronous pass, as the floor of the bench builds it by hand.
 * graphql-jit's compiled execution builds three closures, a resolve info and a response path per
 * resolver call, and a location and a path array per scalar: a third of the garbage of a 100-order
 * query, which is most of what Outrigger spent above the floor.
 *
 * Only shapes whose answer is certain to equal graphql-js's are planned; anything else is
 * graphql-jit's or graphql-js's (compiled.ts): fragments, directives, variables,
 * non-null types, abstract types, enums and custom scalars, embedded objects, aggregations,
 * arguments on scalar fields, a response key given twice, a scalar whose name an Object.prototype
 * member has. What the plan cannot know before the documents arrive (a read that fails, a value
 * a scalar would have to convert or refuse) is checked while building: direct-run.ts then
 * gives up, and graphql-js answers over the same reads.
 */
import {
  getArgumentValues,
  GraphQLBoolean,
  GraphQLFloat,
  GraphQLID,
  GraphQLInt,
  GraphQLString,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { JoinStart } from '../../reads/prefetch.js';
import type { RequestState } from '../../reads/request-state.js';
import type { ReadProjection } from '../../types.js';
import type { DirectField, ProjectionNeeds } from '../resolvers.js';

/** A scalar read from the document: `accepts` says whether graphql-js would write the value as it is. */
export interface LeafStep {
  readonly kind: 'leaf';
  readonly key: string;
  readonly name: string;
  /** The mapped dot path (readPath's semantics); undefined: the document's own property `name`. */
  readonly path: readonly string[] | undefined;
  readonly accepts: (value: unknown) => boolean;
}

export interface TypenameStep {
  readonly kind: 'typename';
  readonly key: string;
  readonly typeName: string;
}

/** A read (root window or join) and what to build from each of its documents. */
export interface ReadStep {
  readonly kind: 'read';
  readonly key: string;
  /** Position among its object's reads. */
  readonly index: number;
  readonly read: JoinStart<RequestState>;
  /** The field's arguments, coerced once: a plan is made only for operations without variables. */
  readonly args: Record<string, unknown>;
  readonly single: boolean;
  readonly object: ObjectPlan;
  /** What a projection of this read must keep. */
  readonly needs: ProjectionNeeds;
  /** The fields read (RESTHeart's `keys`), set once the whole operation is planned. */
  projection: ReadProjection | undefined;
}

export type Step = LeafStep | TypenameStep | ReadStep;

/** One selection set on one object type: its steps in the order of the answer's keys. */
export interface ObjectPlan {
  readonly steps: readonly Step[];
  readonly reads: readonly ReadStep[];
  /**
   * The answer's object from its values in step order: one object literal compiled for the
   * selection (keys are GraphQL names, written as JSON strings), so every object of a list shares
   * one shape from the start; building them key by key cost four times the floor's hand-written map.
   */
  readonly make: (values: readonly unknown[]) => Record<string, unknown>;
  /** Where the run puts one object's values before `make` (the run is synchronous, and a plan never contains itself). */
  readonly values: unknown[];
}

export type DirectFields = ReadonlyMap<unknown, DirectField>;

/** The root of an operation's plan, its reads' projections assigned, or undefined when it has none. */
export function planRoot(schema: GraphQLSchema, fields: DirectFields, operation: OperationDefinitionNode): ObjectPlan | undefined {
  const queryType = schema.getQueryType();
  if (operation.operation !== 'query' || !queryType) return undefined;
  if ((operation.variableDefinitions?.length ?? 0) > 0 || (operation.directives?.length ?? 0) > 0) return undefined;
  const root = objectPlan(fields, queryType, operation.selectionSet, true);
  if (root === undefined || root.reads.length === 0) return undefined;
  assignProjections(root);
  return root;
}

/**
 * Each read asks only for the fields the answer needs (RESTHeart's `keys`): the scalars selected
 * (their first path segment), the foreign keys the joins below read, and what the read itself
 * keeps (a join's `$in` path and sort, and `_id`). The hand-written server parses whole documents:
 * 13 KB for the bench's 100 orders against 6 KB, 69 against 27 µs of JSON.parse (issue 39).
 * Every read of one collection in the document gets one projection, the union of theirs, so the
 * batcher groups them as before; a collection one of whose reads cannot be projected (a join the
 * batcher matches locally) is read whole. `_id` is left out only when nothing needs it.
 */
function assignProjections(root: ObjectPlan): void {
  const byTarget = new Map<string, { fields: Set<string> | undefined; steps: ReadStep[] }>();
  const visit = (plan: ObjectPlan): void => {
    for (const step of plan.reads) {
      const target = step.needs.target;
      let entry = byTarget.get(target);
      if (entry === undefined) {
        entry = { fields: new Set(), steps: [] };
        byTarget.set(target, entry);
      }
      entry.steps.push(step);
      const fields = fieldsNeeded(step);
      if (fields === undefined) entry.fields = undefined;
      else if (entry.fields !== undefined) for (const f of fields) entry.fields.add(f);
      visit(step.object);
    }
  };
  visit(root);
  for (const { fields, steps } of byTarget.values()) {
    if (fields === undefined || fields.size === 0) continue;
    if ([...fields].some((f) => f === '' || f.startsWith('$') || f.includes('\u0000'))) continue;
    const keys: Record<string, 0 | 1> = fields.has('_id') ? {} : { _id: 0 };
    for (const f of [...fields].sort()) keys[f] = 1;
    const projection: ReadProjection = { keys, id: JSON.stringify(keys) };
    for (const step of steps) step.projection = projection;
  }
}

/** The fields of a read's documents its answer and the reads below need; undefined when a read below cannot say. */
function fieldsNeeded(step: ReadStep): Set<string> | undefined {
  if (step.needs.keeps === undefined) return undefined;
  const fields = new Set<string>(step.needs.keeps);
  for (const s of step.object.steps) {
    if (s.kind === 'leaf') fields.add(s.path === undefined ? s.name : (s.path[0] as string));
    else if (s.kind === 'read') {
      if (s.needs.parentNeeds === undefined) return undefined;
      for (const f of s.needs.parentNeeds) fields.add(f);
    }
  }
  return fields;
}

function objectPlan(fields: DirectFields, type: GraphQLObjectType, selectionSet: SelectionSetNode, isRoot: boolean): ObjectPlan | undefined {
  const steps: Step[] = [];
  const reads: ReadStep[] = [];
  const keys = new Set<string>();
  for (const selection of selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || (selection.directives?.length ?? 0) > 0) return undefined;
    const key = selection.alias?.value ?? selection.name.value;
    // `__proto__` as an object literal's key would set the prototype, not a member.
    if (keys.has(key) || key === '__proto__') return undefined;
    keys.add(key);
    const name = selection.name.value;
    if (name === '__typename') {
      steps.push({ kind: 'typename', key, typeName: type.name });
      continue;
    }
    const def = type.getFields()[name];
    if (def === undefined || isNonNullType(def.type)) return undefined;
    const fieldType = def.type;
    const list = isListType(fieldType);
    const item = isListType(fieldType) ? fieldType.ofType : fieldType;
    if (isNonNullType(item) || isListType(item)) return undefined;
    const direct = fields.get(def);
    const accepts = SCALARS.get(item);
    if (accepts !== undefined) {
      if (isRoot || list || selection.selectionSet || (selection.arguments?.length ?? 0) > 0) return undefined;
      if (def.resolve === undefined && !(name in Object.prototype)) steps.push({ kind: 'leaf', key, name, path: undefined, accepts });
      else if (direct !== undefined && 'path' in direct) steps.push({ kind: 'leaf', key, name, path: direct.path, accepts });
      else return undefined;
      continue;
    }
    if (!isObjectType(item) || direct === undefined || !('read' in direct) || !selection.selectionSet) return undefined;
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(def, selection, {});
    } catch {
      return undefined;
    }
    const object = objectPlan(fields, item, selection.selectionSet, false);
    if (object === undefined) return undefined;
    const step: ReadStep = { kind: 'read', key, index: reads.length, read: direct.read, args, single: direct.single, object, needs: direct.projection, projection: undefined };
    steps.push(step);
    reads.push(step);
  }
  return { steps, reads, make: objectMaker(steps), values: new Array<unknown>(steps.length) };
}

function objectMaker(steps: readonly Step[]): (values: readonly unknown[]) => Record<string, unknown> {
  const members = steps.map((step, i) => `${JSON.stringify(step.key)}: v[${i}]`).join(', ');
  // The keys are GraphQL names, JSON-quoted; nothing else is written into the code.
  return new Function('v', `return { ${members} };`) as (values: readonly unknown[]) => Record<string, unknown>;
}

const MAX_INT = 2_147_483_647;
const MIN_INT = -2_147_483_648;

/**
 * The built-in scalars and the values graphql-js's serializers return unchanged; any other value
 * (one they convert, such as a number for a String, or refuse) makes the run give up.
 */
const isString = (v: unknown): boolean => typeof v === 'string';
const SCALARS = new Map<unknown, (value: unknown) => boolean>([
  // graphql-js's specified scalars are singletons: every schema built from SDL uses these objects.
  [GraphQLString, isString],
  [GraphQLID, isString],
  [GraphQLInt, (v) => typeof v === 'number' && Number.isInteger(v) && v <= MAX_INT && v >= MIN_INT],
  [GraphQLFloat, (v) => typeof v === 'number' && Number.isFinite(v)],
  [GraphQLBoolean, (v) => typeof v === 'boolean'],
]);
