/**
 * Which transport answers a request to `/graphql/<uri>` (issue 53 item 8): GraphQL over SSE or a
 * plain JSON answer. `Accept: application/json, text/event-stream` (what MCP-style and some
 * GraphQL clients send for every request) used to send a query to the SSE transport, which
 * serves subscriptions only and answered 400. Now, as the GraphQL-over-HTTP and graphql-sse
 * conventions read Accept:
 * - `text/event-stream` not named (or q=0): JSON; a wildcard range does not ask for a stream;
 * - named with a q above every JSON type's (`text/event-stream` alone, as graphql-sse's client
 *   sends): SSE, whatever the operation (a query there gets the transport's 400 naming the fix);
 * - named, not preferred (a tie included): SSE when the operation is a subscription, JSON otherwise.
 *   Only this case looks at the operation, through the app's document cache, which the execution
 *   then hits.
 */
import { getOperationAST } from 'graphql';
import type { CompiledApp } from '../compile/compile-app.js';
import { resolveTrusted } from '../document/trusted/documents.js';
import { MAX_QUERY_BYTES } from '../types.js';
import { documentIdOf } from './execute.js';
import { qualityOf, requestParams, type GraphqlHttpInput } from './http-handler.js';

const EVENT_STREAM = 'text/event-stream';

export type StreamChoice = 'json' | 'sse' | 'by-operation';

export function streamChoice(accept: string | undefined): StreamChoice {
  if (accept === undefined || !accept.toLowerCase().includes(EVENT_STREAM)) return 'json';
  const stream = qualityOf(accept, EVENT_STREAM);
  if (stream.specificity !== 2 || stream.q <= 0) return 'json';
  const json = Math.max(qualityOf(accept, 'application/json').q, qualityOf(accept, 'application/graphql-response+json').q);
  return stream.q > json ? 'sse' : 'by-operation';
}

/**
 * Whether the request's operation is a subscription, decided as the execution would (trusted
 * documents, size, the cached parse): anything it would refuse is not, and the JSON answer names
 * the problem.
 */
export function isSubscriptionRequest(input: GraphqlHttpInput, app: CompiledApp): boolean {
  const params = requestParams(input);
  if ('status' in params) return false;
  const trusted = resolveTrusted(app.trusted, params.query, documentIdOf(params));
  if (!trusted.ok || Buffer.byteLength(trusted.query, 'utf8') > MAX_QUERY_BYTES) return false;
  const { document } = app.prepare(trusted.query);
  return document !== undefined && getOperationAST(document, params.operationName ?? undefined)?.operation === 'subscription';
}
