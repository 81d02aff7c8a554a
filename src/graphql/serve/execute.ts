/**
 * Executes one GraphQL request against a compiled app and decides its HTTP status (SPEC §6.3):
 * 200 with data (partial data with errors included); 400 for syntax, validation, variable and
 * operation-selection errors, for a request needing more than `maxBackendReads`, and for a
 * mutation refused before its first write (writes/plan.ts); 405 for a
 * mutation where only queries are allowed (GET); 413 for a query over 100 KiB; 502 when backend
 * failures leave no data; 504 when the time limit passes. Errors are masked: only messages written
 * for clients (GraphQL's own, ours, backend summaries) are shown; anything else becomes a generic
 * message and goes to `onError`.
 */
import { getOperationAST, getVariableValues, type ExecutionResult, type GraphQLError, type GraphQLFormattedError, type OperationDefinitionNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import { onAbort, RequestAbort } from '../../util/request-abort.js';
import type { CompiledApp } from '../compile/compile-app.js';
import type { CostEstimate } from '../compile/cost/estimate.js';
import { PLANNED_MAX_OUTPUT, planQuery, runPlan, type EnginePlan, type Execution } from '../compile/engines/engine.js';
import { maskFormatted, withCode } from '../errors.js';
import { BACKEND_ERROR_CODES, RequestState, budgetError, timeoutError } from '../reads/request-state.js';
import { resolveTrusted } from '../document/trusted/documents.js';
import { ExecutionDeadline } from '../limits/deadline.js';
import { MAX_QUERY_BYTES, type RequestContext } from '../types.js';
import { persistedQueryStep, type PersistedQueries } from './persisted-queries.js';
import { AnswerWitness, type GraphqlAnswers } from './answer-cache.js';

export interface GraphqlParams {
  /** Absent when the client names a trusted document by its hash only. */
  readonly query?: string;
  readonly variables?: Readonly<Record<string, unknown>> | null;
  readonly operationName?: string | null;
  /** `sha256:<hex>` of a trusted document (GraphQL-over-HTTP persisted documents). */
  readonly documentId?: string | null;
  /** The request's extensions (Apollo's `persistedQuery.sha256Hash` is read from it). */
  readonly extensions?: Readonly<Record<string, unknown>> | null;
}

export interface GraphqlResponseBody {
  data?: Record<string, unknown> | null;
  errors?: GraphQLFormattedError[];
  extensions?: Record<string, unknown>;
}

export interface GraphqlOutcome {
  readonly status: number;
  readonly body: GraphqlResponseBody;
  /** Extra response headers (`allow` on 405). */
  readonly headers?: Record<string, string>;
  /** Backend reads this request made (for metrics and logs); absent when it did not execute. */
  readonly backendReads?: number;
  /** Backend writes this request made (mutations). */
  readonly backendWrites?: number;
  /**
   * A syntax, validation or variable error: a GraphQL request error, which GraphQL-over-HTTP
   * answers with 200 when the response is application/json (see http-handler.ts).
   */
  readonly documentError?: true;
  /** The whole answer served from the response cache, serialized (SPEC §12 `descriptor.cache`); `body` is then empty. */
  readonly cachedBody?: string;
  /** An answer that may be kept whole: hands it the serialized body (undefined: not sent), true when stored; always called once when present. */
  readonly storeAnswer?: (serialized: string | undefined) => boolean;
}

export interface ExecuteOptions {
  /** GET: only queries may run; a mutation answers 405 (GraphQL-over-HTTP). */
  readonly queriesOnly?: boolean;
  /** Automatic persisted queries' store (persisted-queries.ts); without it a hash alone answers PersistedQueryNotSupported. */
  readonly persistedQueries?: PersistedQueries;
  /** The response cache's whole answers (serve/answer-cache.ts): used for queries of apps whose descriptor says `cache`. */
  readonly answers?: GraphqlAnswers;
}

export function errorBody(message: string, code: string): GraphqlResponseBody {
  return { errors: [{ message, extensions: { code } }] };
}

/**
 * One request through its steps, as graphql-js writes execution: the document (trusted
 * documents, size, parse), the operation, validation, the variables, the limits before any read
 * (cost, a mutation's checks, the cost rate limit), the plan (engines/), execution under the
 * deadline, and the answer (masked errors, status).
 */
export async function executeGraphql(app: CompiledApp, params: GraphqlParams, ctx: RequestContext, opts: ExecuteOptions = {}): Promise<GraphqlOutcome> {
  const request = new GraphqlRequest(app, params, ctx);
  // Awaited only when the request names a persisted query: the common path stays without a pause.
  const persisted = params.extensions?.persistedQuery === undefined ? undefined : await persistedQueryStep(app, params, opts.persistedQueries);
  if (persisted?.kind === 'answer') return { status: persisted.status, body: errorBody(persisted.message, persisted.code) };
  if (persisted?.kind === 'run') request.persistedQuery = persisted.query;
  const invalid = documentStep(request) ?? operationStep(request, opts);
  // Registered once it parsed and validated (as Apollo Server does): only documents the app runs take room.
  if (invalid === undefined && persisted?.kind === 'run' && persisted.register) await persisted.register();
  const refused = invalid ?? variablesStep(request) ?? limitsStep(request);
  if (refused !== undefined) return refused;
  // SPEC §10: a rate limit with `units: cost` counts the estimate, refused (429) here before any
  // read, and a mutation before its first write (its read-backs and joins are in the estimate).
  const charged = ctx.chargeCost?.((request.cost as CostEstimate).documents);
  if (charged) await charged;
  // SPEC §12: a whole answer from memory, decided for this caller after the ACL, the limits and the charge.
  const cached = await cachedAnswerStep(request, opts);
  if (cached !== undefined) return cached;
  let outcome: GraphqlOutcome | undefined;
  try {
    const result = await executeStep(request, planStep(request));
    outcome = result === undefined ? { status: 500, body: errorBody('internal error while executing the query', 'INTERNAL_SERVER_ERROR') } : keptAnswer(request, answerStep(request, result));
  } finally {
    // Identical queries waiting for this one look again once it stored, or at once when it will not (answer-cache.ts).
    if (outcome?.storeAnswer === undefined) request.witness?.land();
  }
  return outcome;
}

/** What the steps of one request learn, in the order they learn it. */
class GraphqlRequest implements Execution {
  document!: DocumentNode;
  validationErrors: readonly GraphQLError[] | undefined;
  operation!: OperationDefinitionNode;
  variableValues!: Record<string, unknown>;
  cost: CostEstimate | undefined;
  /** The text an automatic persisted query named (persisted-queries.ts), checked against its hash. */
  persistedQuery: string | undefined;
  /** The document's text as run (a trusted document's, a persisted query's or the request's). */
  text!: string;
  /** Records the reads of a query whose whole answer may be kept (answer-cache.ts). */
  witness: AnswerWitness | undefined;
  state!: RequestState;
  deadline!: ExecutionDeadline;
  readonly schema: GraphQLSchema;
  readonly variables: Readonly<Record<string, unknown>> | undefined;
  readonly operationName: string | undefined;
  readonly hideSuggestions: boolean;

  constructor(
    readonly app: CompiledApp,
    readonly params: GraphqlParams,
    readonly ctx: RequestContext,
  ) {
    this.schema = app.schema;
    this.variables = params.variables ?? undefined;
    this.operationName = params.operationName ?? undefined;
    this.hideSuggestions = !app.introspection;
  }
}

/** Trusted documents (or the persisted query's text), the size bound, parse (the app's cache). */
function documentStep(request: GraphqlRequest): GraphqlOutcome | undefined {
  const { app, params } = request;
  const trusted = request.persistedQuery !== undefined ? { ok: true as const, query: request.persistedQuery } : resolveTrusted(app.trusted, params.query, documentIdOf(params));
  if (!trusted.ok) return { status: 400, body: errorBody(trusted.message, trusted.code) };
  const query = (request.text = trusted.query);
  if (Buffer.byteLength(query, 'utf8') > MAX_QUERY_BYTES) {
    return {
      status: 413,
      body: errorBody(`the query is larger than ${MAX_QUERY_BYTES / 1024} KiB; send a smaller query`, 'QUERY_TOO_LARGE'),
    };
  }
  const prepared = app.prepare(query);
  if (prepared.syntaxErrors) return { status: 400, documentError: true, body: { errors: prepared.syntaxErrors.map((e) => withCode(e.toJSON(), 'GRAPHQL_PARSE_FAILED')) } };
  if (!prepared.document) return { status: 400, body: errorBody('the query could not be parsed', 'GRAPHQL_PARSE_FAILED') };
  request.document = prepared.document;
  // Validation errors are answered after the operation's method check (a GET mutation is 405 first).
  if (prepared.validationErrors) request.validationErrors = prepared.validationErrors;
  return undefined;
}

/** The operation: a GET mutation, validation errors, a missing operation or an operation type the app or HTTP cannot serve. */
function operationStep(request: GraphqlRequest, opts: ExecuteOptions): GraphqlOutcome | undefined {
  const { app, params } = request;
  const operation: OperationDefinitionNode | null | undefined = getOperationAST(request.document, params.operationName ?? undefined);
  if (operation?.operation === 'mutation' && opts.queriesOnly) {
    return {
      status: 405,
      headers: { allow: 'POST' },
      body: errorBody('mutations cannot be sent with GET; use POST', 'METHOD_NOT_ALLOWED'),
    };
  }
  if (request.validationErrors) {
    return { status: 400, documentError: true, body: { errors: request.validationErrors.map((e) => withCode(e.toJSON(), 'GRAPHQL_VALIDATION_FAILED')) } };
  }
  if (!operation) {
    const message = params.operationName ? `operationName "${params.operationName}" does not name an operation of the query` : 'the query holds several operations; pass operationName to pick one';
    return { status: 400, body: errorBody(message, 'OPERATION_NOT_FOUND') };
  }
  // GraphQL over HTTP: an operation type the schema lacks is a request error (400), not a 200 with errors.
  if (operation.operation !== 'query' && !app.schema.getRootType(operation.operation)) {
    return { status: 400, body: errorBody(`this app has no ${operation.operation} type; it answers queries only`, 'OPERATION_NOT_SUPPORTED') };
  }
  if (operation.operation === 'subscription') {
    return {
      status: 400,
      body: errorBody(
        'a subscription needs a streaming transport: GraphQL over SSE (this path with Accept: text/event-stream) or GraphQL over WebSocket (the graphql-transport-ws subprotocol)',
        'SUBSCRIPTION_NEEDS_STREAM',
      ),
    };
  }
  request.operation = operation;
  return undefined;
}

/**
 * Variables coerced first (defaults, input-field defaults): the estimate must see what execution
 * will, and a variable that does not coerce is the client's error (BAD_USER_INPUT).
 */
function variablesStep(request: GraphqlRequest): GraphqlOutcome | undefined {
  const coerced = getVariableValues(request.schema, request.operation.variableDefinitions ?? [], request.params.variables ?? {}, {
    maxErrors: 20,
    hideSuggestions: request.hideSuggestions,
  });
  if (coerced.errors) return { status: 400, documentError: true, body: { errors: coerced.errors.map((e) => withCode(e.toJSON(), 'BAD_USER_INPUT')) } };
  request.variableValues = coerced.coerced;
  return undefined;
}

/**
 * Refused before any read (and a mutation before its first write, issue 34): the estimate needs
 * only the document, the variables and the mappings.
 */
function limitsStep(request: GraphqlRequest): GraphqlOutcome | undefined {
  const { app, document, operation, variableValues } = request;
  const cost = app.estimate(document, operation, variableValues);
  const max = app.maxCost;
  if (cost.reads > max.reads || cost.documents > max.documents || cost.output > max.output) {
    // Infinity: the document expands past what the estimate walks (fragments spread in fragments).
    const n = (x: number) => (Number.isFinite(x) ? String(x) : 'too many to count');
    const message =
      `this ${operation.operation} may need ${n(cost.reads)} backend reads and ${n(cost.documents)} documents and produce ${n(cost.output)} values; ` +
      `this app allows at most ${max.reads} reads, ${max.documents} documents and ${max.output} values per operation (maxCost); ask for smaller limits, fewer nested lists or fewer fields`;
    return { status: 400, body: { errors: [{ message, extensions: { code: 'QUERY_TOO_COSTLY', cost, maxCost: max } }] } };
  }
  if (operation.operation === 'mutation') {
    // Refused before the first write: too many writes, bulk inserts past the bound, operator keys in arguments.
    const problems = app.checkMutation(document, operation, variableValues);
    if (problems.length > 0) return { status: 400, body: { errors: problems.map((e) => withCode(e.toJSON(), 'BAD_USER_INPUT')) } };
  }
  request.cost = cost;
  return undefined;
}

/** A query of an app whose descriptor says `cache`: its whole answer from memory (a hit), or a witness of its reads (a miss). */
async function cachedAnswerStep(request: GraphqlRequest, opts: ExecuteOptions): Promise<GraphqlOutcome | undefined> {
  const { app } = request;
  const maxAgeSeconds = app.answerMaxAgeSeconds;
  if (opts.answers === undefined || maxAgeSeconds === undefined || request.operation.operation !== 'query' || app.verbose) return undefined;
  const found = await opts.answers.lookup({
    app: { uri: app.uri, version: app.version, maxAgeSeconds, readPolicy: app.settings.readPolicy },
    query: request.text,
    operationName: request.operationName,
    variables: request.variableValues,
    ctx: request.ctx,
  });
  if (found.kind === 'hit') return { status: 200, body: {}, cachedBody: found.body, headers: found.headers };
  request.witness = found.witness;
  return undefined;
}

/** An executed answer that may be kept whole: 200 without errors, the witness still fit; Cache-Status says whether it was. */
function keptAnswer(request: GraphqlRequest, outcome: GraphqlOutcome): GraphqlOutcome {
  const witness = request.witness;
  if (witness === undefined) return outcome;
  const headers = { ...outcome.headers, 'cache-status': AnswerWitness.status(false) };
  if (outcome.status !== 200 || outcome.body.errors !== undefined || !witness.usable) return { ...outcome, headers };
  return {
    ...outcome,
    headers,
    storeAnswer: (serialized) => {
      const stored = witness.store(serialized);
      if (stored) headers['cache-status'] = AnswerWitness.status(true);
      return stored;
    },
  };
}

/** A planned engine's plan (direct, then compiled) for a query small enough to run without the clock; else graphql-js. */
function planStep(request: GraphqlRequest): EnginePlan | undefined {
  if (request.operation.operation !== 'query' || (request.cost as CostEstimate).output > PLANNED_MAX_OUTPUT) return undefined;
  return planQuery(request.app.engines, request.document, request.operation, request.operationName);
}

/**
 * Execution under the time limit: the plan (or graphql-js) raced against the abort; undefined
 * when it threw (a bug: told to `onError`, answered 500).
 */
async function executeStep(request: GraphqlRequest, plan: EnginePlan | undefined): Promise<ExecutionResult | 'aborted' | undefined> {
  const { app, ctx } = request;
  const limits = app.settings.limits;
  // The server's abort for this execution when it made one (RequestContext.signal), else one tied to ctx.signal.
  const owned = ctx.signal instanceof RequestAbort;
  const controller = owned ? ctx.signal : new RequestAbort();
  request.state = new RequestState(app.settings, ctx, controller);
  if (app.verbose) request.state.readLog = [];
  request.state.operationName = request.operation.name?.value ?? null;
  request.state.cacheReads = request.operation.operation === 'query';
  request.state.witness = request.witness;
  let timer: NodeJS.Timeout | undefined;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort(controller, () => resolve('aborted'));
    timer = setTimeout(() => {
      request.state.timedOut = true;
      controller.abort();
    }, limits.timeoutMs);
  });
  // The deadline inside execution: synchronous completion reads the clock (limits/deadline.ts).
  request.deadline = new ExecutionDeadline(
    performance.now() + limits.timeoutMs,
    () => {
      if (!controller.aborted) request.state.timedOut = true;
      controller.abort();
    },
    () => controller.aborted,
    app.maxCost.output,
  );
  // The client went away (the server aborts ctx.signal): stop reading for it.
  const stopListening = !owned && ctx.signal !== undefined ? onAbort(ctx.signal, () => controller.abort()) : undefined;
  try {
    return await Promise.race([runPlan(plan, request), aborted]);
  } catch (error) {
    app.onError?.(error, ctx);
    return undefined;
  } finally {
    clearTimeout(timer);
    stopListening?.();
  }
}

/** The outcome: the output budget, the clock, the read budget, then the data with masked errors and its status. */
function answerStep(request: GraphqlRequest, result: ExecutionResult | 'aborted'): GraphqlOutcome {
  const { app, ctx, state, deadline } = request;
  const limits = app.settings.limits;
  const backendReads = state.reads;
  const backendWrites = state.writes;
  // The output budget stopped the answer (limits/deadline.ts): not a timeout, the client's ask.
  if (deadline.haltedBy === 'output') return { status: 400, body: { errors: [ExecutionDeadline.outputError(app.maxCost.output)] }, backendReads, ...(backendWrites > 0 ? { backendWrites } : {}) };
  if (result === 'aborted' || state.timedOut) {
    if (state.timedOut) return { status: 504, body: { errors: [timeoutError(limits.timeoutMs).toJSON()] }, backendReads };
    return { status: 499, body: errorBody('the client closed the request', 'REQUEST_ABORTED'), backendReads };
  }
  // A mutation's read-backs can pass the budget after its writes: they are still reported (an idempotency record keeps the answer).
  if (state.budgetExceeded) return { status: 400, body: { errors: [budgetError(limits.maxBackendReads).toJSON()] }, backendReads, ...(backendWrites > 0 ? { backendWrites } : {}) };

  // No data entry: the request failed before execution (variables could not be coerced).
  if (!('data' in result)) {
    return { status: 400, documentError: true, body: { errors: (result.errors ?? []).map((e) => withCode(e.toJSON(), 'BAD_USER_INPUT')) }, backendReads };
  }
  const errors = result.errors?.map((e) => maskFormatted(e, app.onError, ctx));

  const data = result.data ?? null;
  const body: GraphqlResponseBody = { data };
  if (errors && errors.length > 0) body.errors = errors;
  if (app.verbose) body.extensions = verboseExtensions(state);
  const backendFailed = errors?.some((e) => BACKEND_ERROR_CODES.has(String(e.extensions?.code))) ?? false;
  const noData = data === null || Object.values(data).every((v) => v === null);
  return { status: backendFailed && noData ? 502 : 200, body, backendReads, ...(backendWrites > 0 ? { backendWrites } : {}) };
}

/** `documentId`, or Apollo's `extensions.persistedQuery.sha256Hash` as one. */
export function documentIdOf(params: GraphqlParams): string | undefined {
  if (typeof params.documentId === 'string') return params.documentId;
  const pq = params.extensions?.persistedQuery;
  if (pq !== null && typeof pq === 'object' && typeof (pq as Record<string, unknown>).sha256Hash === 'string') {
    return `sha256:${String((pq as Record<string, unknown>).sha256Hash).toLowerCase()}`;
  }
  return undefined;
}

/**
 * What `verbose` adds: the backend reads (collection, page, documents) and the join batching,
 * with the counters under RESTHeart's names (its `dataloader.overall-statistics`).
 */
function verboseExtensions(state: RequestState): Record<string, unknown> {
  const { loads, shared, batches } = state.joinStats;
  return {
    backendReads: { count: state.reads, reads: state.readLog ?? [] },
    dataloader: { 'overall-statistics': { batchLoadCount: loads, batchInvokeCount: batches, cacheHitCount: shared, cacheMissCount: loads - shared } },
  };
}
