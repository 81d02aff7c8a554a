/**
 * Error masking, written once for queries, mutations (serve/execute.ts) and subscription events
 * (subscribe/prepare.ts): only messages written for clients (GraphQL's own, ours, backend
 * summaries) are shown, each with an `extensions.code`; anything else becomes a generic message,
 * and the original goes to the app's `onError` (for logging).
 */
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { OutriggerError } from '../errors.js';
import type { RequestContext } from './types.js';

/** Told of errors masked from the client. */
export type OnMaskedError = ((error: unknown, ctx: RequestContext) => void) | undefined;

/** The message a masked error shows. */
export const MASKED_MESSAGE = 'internal error while resolving this field';

/**
 * The code a client sees with an execution error, or undefined when its message is not for clients
 * (then `onError` has been told of the original).
 */
export function clientCode(error: GraphQLError, onError: OnMaskedError, ctx: RequestContext): string | undefined {
  const original = error.originalError;
  if (original === undefined || original instanceof GraphQLError || original instanceof OutriggerError) {
    const code = error.extensions?.code;
    if (code) return code as string;
    return original instanceof OutriggerError ? original.code : 'GRAPHQL_EXECUTION_FAILED';
  }
  onError?.(original, ctx);
  return undefined;
}

/** An execution error as the client sees it (serve/execute.ts' answers). */
export function maskFormatted(error: GraphQLError, onError: OnMaskedError, ctx: RequestContext): GraphQLFormattedError {
  const code = clientCode(error, onError, ctx);
  if (code === undefined) {
    return {
      message: MASKED_MESSAGE,
      ...(error.locations ? { locations: error.locations } : {}),
      ...(error.path ? { path: error.path } : {}),
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    };
  }
  return withCode(error.toJSON(), code);
}

/** An execution error as the client sees it, still a GraphQLError (subscription events, serialized later). */
export function maskError(error: GraphQLError, onError: OnMaskedError, ctx: RequestContext): GraphQLError {
  const code = clientCode(error, onError, ctx);
  if (code === undefined) return new GraphQLError(MASKED_MESSAGE, { ...(error.path ? { path: error.path } : {}), extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  return new GraphQLError(error.message, { ...(error.nodes ? { nodes: error.nodes } : {}), ...(error.path ? { path: error.path } : {}), extensions: { ...error.extensions, code } });
}

/** The error with `extensions.code`, keeping a code it already has. */
export function withCode(error: GraphQLFormattedError, code: string): GraphQLFormattedError {
  return error.extensions?.code ? error : { ...error, extensions: { ...(error.extensions ?? {}), code } };
}
