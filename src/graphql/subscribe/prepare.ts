/**
 * A subscription request, checked and turned into what the hub runs (SPEC §6.5): the query is
 * parsed and validated with the app's own rules (the cached `prepare`), the operation must be a
 * subscription, the variables are coerced, the one root field's mapping gives the collection,
 * `on` and `find`; the find gets the subscriber's arguments (an omitted one drops its entry, as
 * for queries) and `@user.id`/`@user.roles`, and an argument value holding an operator is refused,
 * so a subscriber can narrow the find but never widen it. Each change then runs the subscriber's
 * selection with the change as the root value (joins inside it read as in a query, batched).
 */
import {
  execute,
  getArgumentValues,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  Kind,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type GraphQLFormattedError,
  type GraphQLObjectType,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { interpolateUserVariables } from '../../access/mongo-rules.js';
import type { Principal } from '../../principal/principal.js';
import { isPlainObject } from '../../util/objects.js';
import type { CompiledApp } from '../compile/compile-app.js';
import type { ExecutionContextValue } from '../compile/resolvers.js';
import type { ChangeOp } from '../document/subscriptions.js';
import { maskError, withCode } from '../errors.js';
import { RequestState } from '../reads/request-state.js';
import type { RequestContext } from '../types.js';
import { findOperatorKey } from '../values/ejson.js';
import { interpolateQuery } from '../values/interpolate.js';
import { compileMatcher } from '../values/local-match.js';
import type { ChangeValue, SubscriptionTarget } from './group.js';

/** A Subscription field's mapping as stored (validated at write, document/subscriptions.ts). */
export interface SubscriptionMapping {
  readonly db?: string;
  readonly collection: string;
  readonly on: readonly ChangeOp[];
  readonly find?: Record<string, unknown>;
}

export interface SubscriptionParams {
  readonly query?: unknown;
  readonly variables?: unknown;
  readonly operationName?: unknown;
}

export interface PreparedSubscription extends SubscriptionTarget {
  readonly app: CompiledApp;
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly fieldName: string;
  /** Documents one event may read (the change's, and its selection's joins): what each delivered event is charged under `units: cost` (SPEC §6.5, §10). */
  readonly eventDocuments: number;
  /** The subscriber's selection on one change. */
  build(value: ChangeValue, ctx: RequestContext): Promise<ExecutionResult>;
}

export type Prepared = { ok: true; sub: PreparedSubscription } | { ok: false; status: number; errors: GraphQLFormattedError[] };

type Refused = Extract<Prepared, { ok: false }>;

const fail = (status: number, message: string, code: string): Refused => ({ ok: false, status, errors: [{ message, extensions: { code } }] });

export function prepareSubscription(app: CompiledApp, mappings: Readonly<Record<string, SubscriptionMapping>> | undefined, params: SubscriptionParams, principal: Principal): Prepared {
  const selected = selectOperation(app, params);
  if ('ok' in selected) return selected;
  const { document, operationName, operation, type, variableValues } = selected;
  const node = rootField(operation.selectionSet, document);
  if (!node) return fail(400, 'a subscription selects exactly one field of the Subscription type', 'GRAPHQL_VALIDATION_FAILED');
  const fieldName = node.name.value;
  const field = type.getFields()[fieldName];
  const mapping = mappings?.[fieldName];
  if (!field || !mapping) return fail(400, `${type.name}.${fieldName} is not mapped to changes of a collection`, 'GRAPHQL_VALIDATION_FAILED');

  let args: Record<string, unknown>;
  try {
    args = getArgumentValues(field, node, variableValues);
  } catch (error) {
    return fail(400, error instanceof Error ? error.message : String(error), 'BAD_USER_INPUT');
  }
  for (const [name, value] of Object.entries(args)) {
    const op = findOperatorKey(value);
    // Values are compared as literals; an operator object would widen the find.
    if (op !== undefined) return fail(400, `argument "${name}" holds "${op}", an operator; subscription arguments are values, and cannot widen the field's find`, 'BAD_USER_INPUT');
  }
  let find: Record<string, unknown>;
  try {
    const withUser = interpolateUserVariables(mapping.find ?? {}, principal) as Record<string, unknown>;
    find = interpolateQuery(withUser, { args }, { nullForeignKey: false });
  } catch (error) {
    if (error instanceof GraphQLError) return { ok: false, status: 400, errors: [withCode(error.toJSON(), 'BAD_USER_INPUT')] };
    throw error;
  }
  const equalities = equalityMatcher(find);
  const matcher = equalities ?? compileMatcher(find);
  const first = equalities ? Object.entries(find)[0] : undefined;
  if (!matcher) return fail(400, `the find of ${type.name}.${fieldName} uses an operator the subscription matcher does not run`, 'BAD_USER_INPUT');
  // Per event, as a query of the same selection would be judged (and charged, issue 53).
  const cost = app.estimate(document, operation, variableValues);
  const max = app.maxCost;
  if (cost.reads > max.reads || cost.documents > max.documents || cost.output > max.output) {
    return fail(
      400,
      `each event of this subscription may need ${cost.reads} backend reads and ${cost.documents} documents and produce ${cost.output} values; this app allows at most ${max.reads} reads, ${max.documents} documents and ${max.output} values per operation (maxCost); select fewer or smaller joins`,
      'QUERY_TOO_COSTLY',
    );
  }
  const selection: Selection = { app, document, operation, variableValues, fieldName };
  return {
    ok: true,
    sub: {
      app,
      document,
      operationName,
      fieldName,
      eventDocuments: cost.documents,
      db: mapping.db ?? app.settings.limits.defaultDb,
      collection: mapping.collection,
      on: new Set(mapping.on),
      matches: matcher,
      onlyId: Object.keys(find).every((k) => k === '_id'),
      indexKey: first ? { field: first[0], value: first[1] as string | number | boolean } : undefined,
      build: (value, ctx) => runSelection(selection, value, ctx),
    },
  };
}

/** The request's operation: the query parsed and validated (cached), the one operation picked and a subscription, its variables coerced. */
function selectOperation(app: CompiledApp, params: SubscriptionParams): SelectedOperation | Refused {
  if (typeof params.query !== 'string' || params.query.trim() === '') return fail(400, 'the request needs a query (a subscription operation)', 'BAD_REQUEST');
  if (params.variables !== undefined && params.variables !== null && !isPlainObject(params.variables)) return fail(400, 'variables must be an object', 'BAD_REQUEST');
  if (params.operationName !== undefined && params.operationName !== null && typeof params.operationName !== 'string') return fail(400, 'operationName must be a string', 'BAD_REQUEST');
  const prepared = app.prepare(params.query);
  if (prepared.syntaxErrors) return { ok: false, status: 400, errors: prepared.syntaxErrors.map((e) => withCode(e.toJSON(), 'GRAPHQL_PARSE_FAILED')) };
  if (prepared.validationErrors) return { ok: false, status: 400, errors: prepared.validationErrors.map((e) => withCode(e.toJSON(), 'GRAPHQL_VALIDATION_FAILED')) };
  const document = prepared.document as DocumentNode;
  const operationName = (params.operationName as string | null | undefined) ?? undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation)
    return fail(
      400,
      operationName ? `operationName "${operationName}" does not name an operation of the query` : 'the query holds several operations; pass operationName to pick one',
      'OPERATION_NOT_FOUND',
    );
  if (operation.operation !== 'subscription') {
    return fail(
      400,
      `only subscriptions are served over this transport; send ${operation.operation === 'query' ? 'queries' : 'mutations'} as a plain POST to the same path`,
      'OPERATION_NOT_SUPPORTED',
    );
  }
  const type = app.schema.getSubscriptionType();
  if (!type) return fail(400, 'this app has no Subscription type', 'OPERATION_NOT_SUPPORTED');
  const coerced = getVariableValues(app.schema, operation.variableDefinitions ?? [], (params.variables as Record<string, unknown> | null) ?? {}, { maxErrors: 20 });
  if (coerced.errors) return { ok: false, status: 400, errors: coerced.errors.map((e) => withCode(e.toJSON(), 'BAD_USER_INPUT')) };
  return { document, operationName, operation, type, variableValues: coerced.coerced };
}

interface SelectedOperation {
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly operation: OperationDefinitionNode;
  readonly type: GraphQLObjectType;
  readonly variableValues: Record<string, unknown>;
}

/**
 * A find of top-level equalities on plain values (`{group: 3, owner: "alice"}`), the common shape,
 * matched without the general matcher: every change is matched against every subscriber of its
 * collection, so this is the hot loop of delivery. MongoDB semantics kept: a value equals the
 * field, or is an element of an array field. Anything else: undefined (the general matcher).
 */
function equalityMatcher(find: Record<string, unknown>): ((doc: unknown) => boolean) | undefined {
  const entries = Object.entries(find);
  if (entries.length === 0) return () => true;
  for (const [key, value] of entries) {
    if (key.startsWith('$') || key.includes('.') || key === '_id') return undefined;
    if (typeof value !== 'string' && typeof value !== 'boolean' && !(typeof value === 'number' && Number.isFinite(value))) return undefined;
  }
  return (doc) => {
    if (doc === null || typeof doc !== 'object') return false;
    for (const [key, value] of entries) {
      const field = (doc as Record<string, unknown>)[key];
      if (field === value) continue;
      if (Array.isArray(field) && field.includes(value)) continue;
      return false;
    }
    return true;
  };
}

/** The single root field (through fragments); validation already allowed only one. */
function rootField(set: SelectionSetNode, document: DocumentNode): FieldNode | undefined {
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) return s.name.value.startsWith('__') ? undefined : s;
    if (s.kind === Kind.INLINE_FRAGMENT) return rootField(s.selectionSet, document);
    const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === s.name.value);
    if (fragment && fragment.kind === Kind.FRAGMENT_DEFINITION) return rootField(fragment.selectionSet, document);
  }
  return undefined;
}

/** A subscriber's selection, as each change runs it: the operation and its coerced variables, the root field the change fills. */
interface Selection {
  readonly app: CompiledApp;
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly variableValues: Record<string, unknown>;
  readonly fieldName: string;
}

async function runSelection(selection: Selection, value: ChangeValue, ctx: RequestContext): Promise<ExecutionResult> {
  const { app, document, operation, variableValues, fieldName } = selection;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), app.settings.limits.timeoutMs);
  try {
    const state = new RequestState(app.settings, ctx, controller.signal);
    const contextValue: ExecutionContextValue = { state };
    const result = await execute({
      schema: app.schema,
      document,
      operationName: operation.name?.value,
      variableValues,
      rootValue: { [fieldName]: value },
      contextValue,
    });
    if (!result.errors) return result;
    return { ...result, errors: result.errors.map((e) => maskError(e, app.onError, ctx)) } as ExecutionResult;
  } finally {
    clearTimeout(timer);
  }
}
