/**
 * GraphQL over HTTP for one compiled app, independent of the server: the server hands in the
 * method, headers, query string and body it read, and writes back what this returns.
 *
 * - POST `application/json` `{query, variables?, operationName?, extensions?}` or
 *   `application/graphql` (the body is the query; `operationName`/`variables` may come in the URL).
 * - GET `?query=&variables=&operationName=` for queries; a mutation over GET → 405 `Allow: POST`.
 * - Apollo's automatic persisted queries (`extensions.persistedQuery`) on both, with `persistedQueries`.
 * - Other methods → 405 `Allow: GET, POST` (the server answers CORS preflights before this).
 * - Response `application/graphql-response+json; charset=utf-8`, or `application/json` when the
 *   client's Accept prefers it; 406 when Accept admits neither.
 * - Every answer, errors included, is a GraphQL response body `{data?, errors?}`, as RESTHeart's
 *   GraphQL service answers, so GraphQL clients can read every error the same way.
 * - The body is serialized in slices that yield to the event loop, and refused past
 *   `graphql.maxResponseBytes` with 400 RESPONSE_TOO_LARGE (limits/serialize.ts); every answer
 *   carries `X-Content-Type-Options: nosniff`.
 */
import { executeGraphql, errorBody, type GraphqlOutcome, type GraphqlParams, type GraphqlResponseBody } from './execute.js';
import type { CompiledApp } from '../compile/compile-app.js';
import { isPlainObject } from '../../util/objects.js';
import { MAX_BODY_BYTES, type RequestContext } from '../types.js';
import { graphqlNestingDepth } from '../../input-limits/graphql-nesting.js';
import { parseBoundedJson } from '../../input-limits/json-depth.js';
import { MAX_GRAPHQL_NESTING } from '../../input-limits/limits.js';
import { serializeJson } from '../limits/serialize.js';
import type { PersistedQueries } from './persisted-queries.js';
import type { GraphqlAnswers } from './answer-cache.js';

export interface GraphqlHttpInput {
  readonly method: string;
  /** As node:http gives them (lower-case names). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly query: URLSearchParams;
  /** The whole request body, or undefined when there was none. */
  readonly body: Buffer | undefined;
}

export interface GraphqlHttpResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Backend reads the request made (for metrics); absent when it did not execute. */
  readonly backendReads?: number;
  /** Backend writes a mutation sent; absent when none (an idempotency record keeps only answers of mutations that wrote). */
  readonly backendWrites?: number;
}

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';
const JSON_TYPE = 'application/json';

/** What the server wires beside the app: Apollo's persisted queries, the response cache's whole answers. */
export interface GraphqlServices {
  readonly persistedQueries?: PersistedQueries;
  readonly answers?: GraphqlAnswers;
}

export async function handleGraphqlHttp(input: GraphqlHttpInput, app: CompiledApp, ctx: RequestContext, services: GraphqlServices = {}): Promise<GraphqlHttpResponse> {
  const profile = app.settings.limits.httpProfile;
  const mediaType = negotiated(header(input.headers, 'accept'), profile);
  if (mediaType === undefined) {
    return respond(JSON_TYPE, {
      status: 406,
      body: errorBody(`the Accept header admits neither ${GRAPHQL_RESPONSE_JSON} nor ${JSON_TYPE}`, 'NOT_ACCEPTABLE'),
    });
  }
  const method = input.method.toUpperCase();
  if (method !== 'GET' && method !== 'POST') {
    return respond(mediaType, {
      status: 405,
      headers: { allow: 'GET, POST' },
      body: errorBody(`method ${method} is not allowed here; use POST (or GET for queries)`, 'METHOD_NOT_ALLOWED'),
    });
  }
  const params = requestParams(input);
  if ('status' in params) return respond(mediaType, params);
  const outcome = await executeGraphql(app, params, ctx, { queriesOnly: method === 'GET', ...services });
  if (outcome.cachedBody !== undefined) return respond(mediaType, outcome, outcome.cachedBody);
  // GraphQL-over-HTTP: with application/json, a well-formed GraphQL response is 200 even when the
  // document failed to parse or validate (legacy clients read `errors`, not the status).
  const status = outcome.documentError && mediaType === JSON_TYPE && profile === 'graphql-over-http' ? 200 : outcome.status;
  const maxBytes = app.settings.limits.maxResponseBytes;
  let serialized: Awaited<ReturnType<typeof serializeJson>>;
  try {
    serialized = await serializeJson(outcome.body, maxBytes);
  } catch (error) {
    outcome.storeAnswer?.(undefined);
    throw error;
  }
  // Called whatever happens: identical queries wait for it (serve/answer-cache.ts).
  outcome.storeAnswer?.(serialized.ok ? serialized.body : undefined);
  if (!serialized.ok) {
    const message = `the answer is larger than ${maxBytes} bytes (graphql.maxResponseBytes) and was not sent; ` + 'ask for fewer documents, fewer fields or fewer aliases, or page through the results';
    return respond(mediaType, { ...outcome, status: 400, headers: {}, body: { errors: [{ message, extensions: { code: 'RESPONSE_TOO_LARGE', maxResponseBytes: maxBytes } }] } });
  }
  return respond(mediaType, { ...outcome, status }, serialized.body);
}

function respond(mediaType: string, outcome: GraphqlOutcome, body: string = JSON.stringify(outcome.body)): GraphqlHttpResponse {
  return {
    status: outcome.status,
    headers: {
      'content-type': `${mediaType}; charset=utf-8`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...(outcome.headers ?? {}),
    },
    body,
    ...(outcome.backendReads !== undefined ? { backendReads: outcome.backendReads } : {}),
    ...(outcome.backendWrites !== undefined ? { backendWrites: outcome.backendWrites } : {}),
  };
}

function bad(message: string, code = 'BAD_REQUEST', status = 400): GraphqlOutcome {
  return { status, body: errorBody(message, code) };
}

function header(headers: GraphqlHttpInput['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** `negotiate`, remembered per Accept header (clients send one or two of them, on every request). */
function negotiated(accept: string | undefined, profile: 'graphql-over-http' | 'restheart'): string | undefined {
  if (accept !== undefined && accept.length > 256) return negotiate(accept, profile);
  const key = `${profile} ${accept ?? ''}`;
  if (negotiations.has(key)) return negotiations.get(key);
  const type = negotiate(accept, profile);
  if (negotiations.size >= 256) negotiations.clear();
  negotiations.set(key, type);
  return type;
}
const negotiations = new Map<string, string | undefined>();

/**
 * Picks the response media type; undefined when Accept admits neither. On a tie the type the
 * client named wins; when only wildcards (or nothing) match, the profile's default: application/json
 * for `graphql-over-http` (as the spec asks of servers that serve legacy clients too),
 * application/graphql-response+json for `restheart`.
 */
export function negotiate(accept: string | undefined, profile: 'graphql-over-http' | 'restheart' = 'graphql-over-http'): string | undefined {
  const fallback = profile === 'restheart' ? GRAPHQL_RESPONSE_JSON : JSON_TYPE;
  if (accept === undefined || accept.trim() === '') return fallback;
  let best: { type: string; q: number; specificity: number } | undefined;
  for (const candidate of fallback === JSON_TYPE ? [JSON_TYPE, GRAPHQL_RESPONSE_JSON] : [GRAPHQL_RESPONSE_JSON, JSON_TYPE]) {
    const { q, specificity } = qualityOf(accept, candidate);
    if (q <= 0) continue;
    if (best === undefined || q > best.q || (q === best.q && specificity === 2 && best.specificity < 2)) best = { type: candidate, q, specificity };
    else if (q === best.q && specificity === 2 && best.specificity === 2 && candidate === GRAPHQL_RESPONSE_JSON) best = { type: candidate, q, specificity };
  }
  return best?.type;
}

/** The q-value Accept gives a media type, by its most specific matching range (RFC 9110 §12.5.1). */
export function qualityOf(accept: string, type: string): { q: number; specificity: number } {
  const [major] = type.split('/');
  let specificity = -1;
  let q = 0;
  for (const part of accept.split(',')) {
    const [range = '', ...paramParts] = part.split(';').map((s) => s.trim().toLowerCase());
    let spec: number;
    if (range === type) spec = 2;
    else if (range === `${major}/*`) spec = 1;
    else if (range === '*/*') spec = 0;
    else continue;
    let value = 1;
    for (const p of paramParts) {
      const [k, v] = p.split('=').map((s) => s.trim());
      if (k === 'q' && v !== undefined) {
        const n = Number(v);
        value = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
      }
    }
    if (spec > specificity) {
      specificity = spec;
      q = value;
    }
  }
  return { q, specificity };
}

function parseJsonParam(name: string, raw: string | null): { ok: true; value: unknown } | { ok: false; outcome: GraphqlOutcome } {
  if (raw === null || raw === '') return { ok: true, value: undefined };
  const parsed = parseBoundedJson(raw);
  if (parsed.ok) return { ok: true, value: parsed.value };
  return { ok: false, outcome: bad(parsed.tooDeep ? `the ${name} parameter ${parsed.message}` : `the ${name} parameter must be a JSON object`) };
}

/** The GraphQL parameters of a GET or POST (as the handler reads them), or the error outcome it would answer. */
export function requestParams(input: GraphqlHttpInput): GraphqlParams | GraphqlOutcome {
  return input.method.toUpperCase() === 'GET' ? paramsFromUrl(input.query) : paramsFromBody(input);
}

function paramsFromUrl(query: URLSearchParams): GraphqlParams | GraphqlOutcome {
  const text = query.get('query');
  const documentId = query.get('documentId');
  if ((text === null || text === '') && documentId === null && query.get('extensions') === null) {
    return bad('a GET request needs the GraphQL query in the "query" URL parameter');
  }
  const variables = parseJsonParam('variables', query.get('variables'));
  if (!variables.ok) return variables.outcome;
  const extensions = parseJsonParam('extensions', query.get('extensions'));
  if (!extensions.ok) return extensions.outcome;
  return checkParams({
    query: text === null || text === '' ? undefined : text,
    variables: variables.value,
    operationName: query.get('operationName'),
    extensions: extensions.value,
    documentId: documentId ?? undefined,
  });
}

function paramsFromBody(input: GraphqlHttpInput): GraphqlParams | GraphqlOutcome {
  const contentType = header(input.headers, 'content-type');
  if (!contentType) {
    return bad(`a POST request needs Content-Type ${JSON_TYPE} or application/graphql`, 'UNSUPPORTED_MEDIA_TYPE', 415);
  }
  const [type = '', ...paramParts] = contentType.split(';').map((s) => s.trim().toLowerCase());
  const charset = paramParts
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return bad(`only utf-8 request bodies are accepted (got charset=${charset})`, 'UNSUPPORTED_MEDIA_TYPE', 415);
  }
  if (type !== JSON_TYPE && type !== 'application/graphql') {
    return bad(`Content-Type must be ${JSON_TYPE} or application/graphql (got ${type})`, 'UNSUPPORTED_MEDIA_TYPE', 415);
  }
  const body = input.body;
  if (!body || body.length === 0) return bad('the request body is empty; send {"query": "..."}');
  if (body.length > MAX_BODY_BYTES) {
    return bad(`the request body is larger than ${MAX_BODY_BYTES / 1024} KiB`, 'PAYLOAD_TOO_LARGE', 413);
  }
  const text = body.toString('utf8');
  if (type === 'application/graphql') {
    const variables = parseJsonParam('variables', input.query.get('variables'));
    if (!variables.ok) return variables.outcome;
    return checkParams({ query: text, variables: variables.value, operationName: input.query.get('operationName') });
  }
  const bounded = parseBoundedJson(text);
  if (!bounded.ok) return bad(bounded.tooDeep ? `the request body ${bounded.message}` : 'the request body is not valid JSON');
  const parsed = bounded.value;
  if (Array.isArray(parsed)) return bad('batched requests (a JSON array) are not supported; send one {"query": ...} object');
  if (!isPlainObject(parsed)) return bad('the request body must be a JSON object {"query": "...", "variables"?: {...}, "operationName"?: "..."}');
  return checkParams(parsed);
}

function checkParams(raw: Record<string, unknown>): GraphqlParams | GraphqlOutcome {
  const { query, variables, operationName, extensions, documentId } = raw;
  const byHash = documentId !== undefined || (isPlainObject(extensions) && extensions.persistedQuery !== undefined);
  if (typeof query !== 'string' && !(query === undefined && byHash)) {
    return bad(query === undefined ? 'the "query" parameter is missing' : 'the "query" parameter must be a string');
  }
  if (documentId !== undefined && typeof documentId !== 'string') return bad('the "documentId" parameter must be a string "sha256:<hex>"');
  // graphql-js parses recursively: refuse deep nesting before it sees the document.
  if (typeof query === 'string' && graphqlNestingDepth(query, MAX_GRAPHQL_NESTING) > MAX_GRAPHQL_NESTING) {
    return bad(`the query nests {, ( or [ more than ${MAX_GRAPHQL_NESTING} levels deep (the limit for GraphQL documents)`, 'GRAPHQL_PARSE_FAILED');
  }
  if (variables !== undefined && variables !== null && !isPlainObject(variables)) return bad('the "variables" parameter must be a JSON object');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    return bad('the "operationName" parameter must be a string');
  }
  if (extensions !== undefined && extensions !== null && !isPlainObject(extensions)) return bad('the "extensions" parameter must be a JSON object');
  return {
    ...(typeof query === 'string' ? { query } : {}),
    variables: (variables as Record<string, unknown> | null | undefined) ?? null,
    operationName: (operationName as string | null | undefined) ?? null,
    ...(typeof documentId === 'string' ? { documentId } : {}),
    ...(isPlainObject(extensions) ? { extensions } : {}),
  };
}

export type { GraphqlResponseBody };
