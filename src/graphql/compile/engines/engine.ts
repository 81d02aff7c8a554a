/**
 * The engines a compiled app executes with, as envelop's `useEngine` puts them: each one plans an
 * operation of a cached document (once, in the app's own memo) or declines it, runs its plan, and
 * gives up where its answer would not be graphql-js's. The fallback is written once (`runPlan`):
 * a plan that gives up hands the request to the interpreted engine, graphql-js itself, which
 * executes it again over the reads the plan recorded (RequestState.replay: no read is sent twice),
 * so every error is worded and located by graphql-js.
 */
import { execute, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { ExecutionDeadline } from '../../limits/deadline.js';
import type { RequestState } from '../../reads/request-state.js';
import type { ExecutionContextValue } from '../resolvers.js';

/** What a plan answers when its answer would not be graphql-js's: graphql-js answers instead. */
export const GAVE_UP: unique symbol = Symbol('gave up');

/**
 * Largest estimated output (values) of an operation a planned engine runs: neither reads the clock
 * inside its synchronous completion as graphql-js's default resolver does (limits/deadline.ts),
 * so this bound keeps that completion short.
 */
export const PLANNED_MAX_OUTPUT = 20_000;

/** One operation as an engine runs it (made once per cached document and operation). */
export interface EnginePlan {
  /** The answer, or GAVE_UP; `variables` as the client sent them. */
  run(state: RequestState, deadline: ExecutionDeadline, variables: Readonly<Record<string, unknown>> | undefined): Promise<ExecutionResult | typeof GAVE_UP>;
}

/** A strategy for queries: its plan of an operation, or undefined when the operation is not its. */
export interface Engine {
  readonly name: string;
  plan(document: DocumentNode, operation: OperationDefinitionNode, operationName: string | undefined): EnginePlan | undefined;
}

/** One execution of a request: what graphql-js needs, and the state a replay replaces. */
export interface Execution {
  state: RequestState;
  readonly deadline: ExecutionDeadline;
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly variables: Readonly<Record<string, unknown>> | undefined;
  readonly operationName: string | undefined;
  readonly hideSuggestions: boolean;
}

/** The first engine's plan of a query (in the app's order), or undefined: graphql-js runs it. */
export function planQuery(engines: readonly Engine[], document: DocumentNode, operation: OperationDefinitionNode, operationName: string | undefined): EnginePlan | undefined {
  for (let i = 0; i < engines.length; i++) {
    const plan = (engines[i] as Engine).plan(document, operation, operationName);
    if (plan !== undefined) return plan;
  }
  return undefined;
}

/** Runs a plan, and graphql-js where there is none or it gave up (over the reads it recorded). */
export async function runPlan(plan: EnginePlan | undefined, execution: Execution): Promise<ExecutionResult> {
  if (plan === undefined) return interpret(execution);
  execution.state.recordReads();
  const result = await plan.run(execution.state, execution.deadline, execution.variables);
  if (result !== GAVE_UP) return result;
  if (execution.state.signal.aborted) return { data: null };
  execution.state = execution.state.replay();
  return interpret(execution);
}

/** The interpreted engine: graphql-js's `execute`, with the deadline's clock-reading field resolver. */
function interpret(execution: Execution): ExecutionResult | Promise<ExecutionResult> {
  return execute({
    schema: execution.schema,
    document: execution.document,
    variableValues: execution.variables,
    operationName: execution.operationName,
    contextValue: { state: execution.state, deadline: execution.deadline } satisfies ExecutionContextValue,
    fieldResolver: execution.deadline.fieldResolver,
    hideSuggestions: execution.hideSuggestions,
  });
}
