/**
 * Joins answered synchronously. graphql-js completes a list of parents whose join fields return
 * promises by building a promise per parent (its fields through `Promise.all`, then the list
 * through another); that machinery, not the join itself, was most of the cost of a 100-parent
 * join. So when a query-mapped field's documents arrive (a root read, or a join's shared entry),
 * the joins graphql-js is about to ask of them are started right there, in the order graphql-js
 * would start them (document by document, field by field), and the field resolves only once they
 * have settled. graphql-js then completes the documents synchronously: each join resolver answers
 * from the settled outcome (its value, or its error thrown at its own path).
 *
 * The loads, their batches and their order are exactly those of lazy completion, because this
 * only applies where lazy completion would certainly call the same join resolvers at the same
 * moment (when the documents arrive). Anything else keeps the lazy path:
 * - the field's type is an object type, a union or an interface, or a list of one (not a list of
 *   lists); for a union or interface, each document's type is found by the type's `resolveType`
 *   (the app's `$typeResolver`, a function of the document alone) as graphql-js will find it, and
 *   the joins planned for that type are started (a document whose type cannot be found gets none:
 *   graphql-js reports its error);
 * - every join field below is nullable, and no non-null field comes before a join among the
 *   fields of a document (a non-null field failing synchronously stops graphql-js from calling the
 *   fields after it); a list of non-null items holds documents without non-null fields (a failing
 *   item stops the list);
 * - no join is reached through a field that is not a join (an embedded object, or an abstract
 *   type), and the same holds all the way down below every join (all or nothing: a level left to
 *   lazy completion would run later than it would have);
 * - the app does not use `rootDoc` (each parent then needs its own copies; see compile/resolvers.ts).
 */
import {
  getArgumentValues,
  getNamedType,
  getNullableType,
  isAbstractType,
  isCompositeType,
  isListType,
  isNonNullType,
  isObjectType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLAbstractType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { collectSubfields } from './collect-subfields.js';
import type { ReadProjection } from '../types.js';

/**
 * One join field's resolution, exactly as its resolver does it: a value, a promise of one, or a
 * thrown field error. `State` is the request's state, which the prefetcher only hands back.
 * `projection`: the fields to read, from direct execution (compile/engines/direct-plan.ts) only.
 */
export type JoinStart<State> = (source: unknown, args: Record<string, unknown>, state: State, projection?: ReadProjection) => unknown;

/** The fields of a compiled app that read the backend. */
export interface LoadingFields<State> {
  /** Join fields (query mappings of non-root types) and how each resolves. */
  readonly joins: ReadonlyMap<GraphQLField<unknown, unknown>, JoinStart<State>>;
  /** Every field with a query mapping, root fields included. */
  readonly all: ReadonlySet<GraphQLField<unknown, unknown>>;
}

/** What a resolver returns when the prefetcher holds no outcome for it. */
export const NOT_PREFETCHED: unique symbol = Symbol('not prefetched');

interface Outcome {
  done: boolean;
  ok: boolean;
  value: unknown;
  /** The value's promise (for an outcome asked for before it settled). */
  readonly source: Promise<unknown> | undefined;
  /** Resolves (never rejects) once settled. */
  readonly settled: Promise<unknown> | undefined;
}

interface PlannedJoin<State> {
  readonly def: GraphQLField<unknown, unknown>;
  readonly nodes: readonly FieldNode[];
  readonly start: JoinStart<State>;
  readonly single: boolean;
  /** Joins below this one's documents; undefined when there are none. */
  readonly below: Plan<State> | undefined;
}

/** The joins to start on the documents of one field (and, through `below`, on theirs). */
interface Plan<State> {
  readonly joins: readonly PlannedJoin<State>[];
  /** A union or interface: the joins per possible type, and the type whose resolveType tells a document's. */
  readonly byType: ReadonlyMap<string, readonly PlannedJoin<State>[]> | undefined;
  readonly abstractType: GraphQLAbstractType | undefined;
  readonly single: boolean;
  /** Per promise of the field's value, the promise of the same value once the joins have settled. */
  readonly continued: Map<Promise<unknown>, Promise<unknown>>;
}

/** Field nodes → documents → outcome of the join they select. */
interface Slot {
  readonly nodes: readonly FieldNode[];
  readonly byDoc: Map<unknown, Outcome>;
}

const UNSAFE = 'unsafe';
const NOTHING = 'nothing';

/** One request's prefetched joins. */
export class Prefetcher<State> {
  private readonly schema: GraphQLSchema;
  private readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  private readonly variables: Readonly<Record<string, unknown>>;
  private readonly plans = new Map<readonly FieldNode[], Plan<State> | undefined>();
  private readonly slots = new Map<FieldNode, Slot[]>();
  private readonly outcomes = new Map<Promise<unknown>, Outcome>();

  constructor(
    private readonly state: State,
    private readonly fields: LoadingFields<State>,
    info: GraphQLResolveInfo,
  ) {
    this.schema = info.schema;
    this.fragments = info.fragments;
    this.variables = info.variableValues;
  }

  /**
   * The outcome of the join `info` selects on `source` if it was prefetched: its value (thrown
   * when it failed), or its promise while it has not settled; else NOT_PREFETCHED.
   */
  answer(info: GraphQLResolveInfo, source: unknown): unknown {
    const nodes = info.fieldNodes;
    const slots = this.slots.get(nodes[0] as FieldNode);
    if (slots === undefined) return NOT_PREFETCHED;
    for (const slot of slots) {
      if (!sameNodes(slot.nodes, nodes)) continue;
      const outcome = slot.byDoc.get(source);
      if (outcome === undefined) return NOT_PREFETCHED;
      if (!outcome.done) return outcome.source;
      if (outcome.ok) return outcome.value;
      throw outcome.value;
    }
    return NOT_PREFETCHED;
  }

  /**
   * What a query-mapped field resolves to (`result`, its value or a promise of it): the same
   * value, once the joins below it have been started and have settled, when they can be.
   */
  afterLoad(result: unknown, info: GraphQLResolveInfo): unknown {
    if (!(result instanceof Promise)) return result;
    const plan = this.planFor(info.returnType, info.fieldNodes);
    return plan === undefined ? result : this.continued(plan, result);
  }

  /** `result`'s value once the plan's joins on it have settled (one continuation per plan and promise). */
  private continued(plan: Plan<State>, result: Promise<unknown>): Promise<unknown> {
    let continued = plan.continued.get(result);
    if (continued === undefined) {
      continued = result.then((value) => {
        const waiting = this.start(plan, value);
        return waiting === undefined ? value : waiting.then(() => value);
      });
      plan.continued.set(result, continued);
    }
    return continued;
  }

  /** Starts the planned joins on the documents of `value`; undefined when none is pending. */
  private start(plan: Plan<State>, value: unknown): Promise<unknown> | undefined {
    const docs = plan.single ? [value] : value;
    if (!Array.isArray(docs)) return undefined;
    if (plan.byType !== undefined) return this.startByType(plan, docs);
    const joins = plan.joins;
    const args = this.argumentsOf(joins);
    const slots = joins.map((j) => this.slotFor(j.nodes));
    let pending: Set<Outcome> | undefined;
    for (const doc of docs) {
      if (doc === null || doc === undefined) continue;
      pending = this.startOn(doc, joins, args, slots, pending);
    }
    if (pending === undefined) return undefined;
    return Promise.all(Array.from(pending, (o) => o.settled));
  }

  /**
   * graphql-js computes the arguments of each field for each document; they only depend on the
   * field nodes and the variables. A field whose arguments fail is not resolved at all (undefined).
   */
  private argumentsOf(joins: readonly PlannedJoin<State>[]): Array<Record<string, unknown> | undefined> {
    return joins.map((j) => {
      try {
        return getArgumentValues(j.def, j.nodes[0] as FieldNode, this.variables);
      } catch {
        return undefined;
      }
    });
  }

  /** `start` for a union or interface: each document gets the joins of the type graphql-js will give it. */
  private startByType(plan: Plan<State>, docs: unknown[]): Promise<unknown> | undefined {
    const abstractType = plan.abstractType as GraphQLAbstractType;
    const resolveType = abstractType.resolveType;
    if (resolveType === undefined || resolveType === null) return undefined;
    const perType = new Map<string, { joins: readonly PlannedJoin<State>[]; args: Array<Record<string, unknown> | undefined>; slots: Slot[] }>();
    let pending: Set<Outcome> | undefined;
    for (const doc of docs) {
      if (doc === null || doc === undefined) continue;
      let name: unknown;
      try {
        // The app's $typeResolver reads the document alone (document/type-resolver); the context
        // and info are not looked at.
        name = resolveType(doc, undefined, undefined as unknown as GraphQLResolveInfo, abstractType);
      } catch {
        continue; // graphql-js reports the error at the document's path
      }
      if (typeof name !== 'string') continue;
      let entry = perType.get(name);
      if (entry === undefined) {
        const joins = plan.byType?.get(name) ?? [];
        entry = { joins, args: this.argumentsOf(joins), slots: joins.map((j) => this.slotFor(j.nodes)) };
        perType.set(name, entry);
      }
      pending = this.startOn(doc, entry.joins, entry.args, entry.slots, pending);
    }
    if (pending === undefined) return undefined;
    return Promise.all(Array.from(pending, (o) => o.settled));
  }

  /** Starts (once per document and join) the joins of one document; adds what is still running to `pending`. */
  private startOn(doc: unknown, joins: readonly PlannedJoin<State>[], args: Array<Record<string, unknown> | undefined>, slots: Slot[], pending: Set<Outcome> | undefined): Set<Outcome> | undefined {
    for (let k = 0; k < joins.length; k++) {
      const a = args[k];
      if (a === undefined) continue;
      const byDoc = (slots[k] as Slot).byDoc;
      let outcome = byDoc.get(doc);
      if (outcome === undefined) {
        outcome = this.run(joins[k] as PlannedJoin<State>, doc, a);
        byDoc.set(doc, outcome);
      }
      if (!outcome.done) (pending ??= new Set()).add(outcome);
    }
    return pending;
  }

  private run(j: PlannedJoin<State>, doc: unknown, args: Record<string, unknown>): Outcome {
    let result: unknown;
    try {
      result = j.start(doc, args, this.state);
    } catch (error) {
      return { done: true, ok: false, value: error, source: undefined, settled: undefined };
    }
    if (!(result instanceof Promise)) return { done: true, ok: true, value: result, source: undefined, settled: undefined };
    const promise = j.below === undefined ? result : this.continued(j.below, result);
    let outcome = this.outcomes.get(promise);
    if (outcome === undefined) {
      const o: Outcome = {
        done: false,
        ok: false,
        value: undefined,
        source: promise,
        settled: promise.then(
          (value) => {
            o.done = true;
            o.ok = true;
            o.value = value;
          },
          (error: unknown) => {
            o.done = true;
            o.value = error;
          },
        ),
      };
      outcome = o;
      this.outcomes.set(promise, outcome);
    }
    return outcome;
  }

  private slotFor(nodes: readonly FieldNode[]): Slot {
    const first = nodes[0] as FieldNode;
    let slots = this.slots.get(first);
    if (slots === undefined) {
      slots = [];
      this.slots.set(first, slots);
    }
    for (const slot of slots) if (sameNodes(slot.nodes, nodes)) return slot;
    const slot: Slot = { nodes, byDoc: new Map() };
    slots.push(slot);
    return slot;
  }

  /** The plan for the documents of a field of type `type` selected by `nodes`; undefined: lazy completion. */
  private planFor(type: GraphQLOutputType, nodes: readonly FieldNode[]): Plan<State> | undefined {
    if (this.plans.has(nodes)) return this.plans.get(nodes);
    let plan: Plan<State> | typeof UNSAFE | typeof NOTHING;
    try {
      plan = this.plan(type, nodes);
    } catch {
      plan = UNSAFE; // e.g. a directive argument graphql-js would refuse: leave it all to graphql-js
    }
    const usable = typeof plan === 'object' ? plan : undefined;
    this.plans.set(nodes, usable);
    return usable;
  }

  private plan(type: GraphQLOutputType, nodes: readonly FieldNode[]): Plan<State> | typeof UNSAFE | typeof NOTHING {
    const nullable = getNullableType(type);
    const single = !isListType(nullable);
    const item = single ? nullable : nullable.ofType;
    const named = getNullableType(item);
    if (isAbstractType(named)) {
      const byType = new Map<string, readonly PlannedJoin<State>[]>();
      let nonNull = false;
      for (const possible of this.schema.getPossibleTypes(named)) {
        const found = this.joinsOf(possible, nodes);
        if (found === UNSAFE) return UNSAFE;
        if (found.joins.length > 0) byType.set(possible.name, found.joins);
        nonNull ||= found.nonNull;
      }
      if (byType.size === 0) return NOTHING;
      if (!single && isNonNullType(item) && nonNull) return UNSAFE;
      return { joins: [], byType, abstractType: named, single, continued: new Map() };
    }
    if (!isObjectType(named)) return UNSAFE;
    const found = this.joinsOf(named, nodes);
    if (found === UNSAFE) return UNSAFE;
    const { joins, nonNull } = found;
    if (joins.length === 0) return NOTHING;
    if (!single && isNonNullType(item) && nonNull) return UNSAFE;
    return { joins, byType: undefined, abstractType: undefined, single, continued: new Map() };
  }

  /** The joins to start on a document of type `named` selected by `nodes`, and whether a non-null field comes among its fields. */
  private joinsOf(named: GraphQLObjectType, nodes: readonly FieldNode[]): { joins: PlannedJoin<State>[]; nonNull: boolean } | typeof UNSAFE {
    const joins: PlannedJoin<State>[] = [];
    let nonNull = false;
    for (const fieldNodes of this.subfields(named, nodes).values()) {
      const name = (fieldNodes[0] as FieldNode).name.value;
      if (name === '__typename') continue; // answered by graphql-js; cannot fail
      const def = named.getFields()[name];
      if (def === undefined) continue; // graphql-js skips it too
      const start = this.fields.joins.get(def as GraphQLField<unknown, unknown>);
      if (start === undefined) {
        // A root field's query mapping reached below the root reads when completed: not planned.
        if (this.fields.all.has(def as GraphQLField<unknown, unknown>)) return UNSAFE;
        if (isNonNullType(def.type)) nonNull = true;
        const inner = getNamedType(def.type);
        if (isCompositeType(inner) && this.reachesJoin(inner, fieldNodes)) return UNSAFE;
        continue;
      }
      if (nonNull || isNonNullType(def.type)) return UNSAFE;
      const below = this.plan(def.type, fieldNodes);
      if (below === UNSAFE) return UNSAFE;
      joins.push({
        def: def as GraphQLField<unknown, unknown>,
        nodes: fieldNodes,
        start,
        single: !isListType(getNullableType(def.type)),
        below: below === NOTHING ? undefined : below,
      });
    }
    return { joins, nonNull };
  }

  /** Whether a selection of a composite type that is not a join reaches a join (abstract types: assume so). */
  private reachesJoin(type: GraphQLOutputType, nodes: readonly FieldNode[]): boolean {
    const named = getNamedType(type);
    if (!isCompositeType(named)) return false;
    if (!isObjectType(named)) return true;
    for (const fieldNodes of this.subfields(named, nodes).values()) {
      const def = named.getFields()[(fieldNodes[0] as FieldNode).name.value];
      if (def === undefined) continue;
      if (this.fields.all.has(def as GraphQLField<unknown, unknown>) || this.reachesJoin(def.type, fieldNodes)) return true;
    }
    return false;
  }

  private subfields(type: GraphQLObjectType, nodes: readonly FieldNode[]): Map<string, FieldNode[]> {
    return collectSubfields(this.schema, this.fragments, this.variables, type, nodes);
  }
}

function sameNodes(a: readonly FieldNode[], b: readonly FieldNode[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
