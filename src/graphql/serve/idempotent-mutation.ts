/**
 * Idempotency keys on `/graphql/<uri>` (SPEC §14): a POST whose operation is a mutation and that
 * carries `Idempotency-Key` is claimed in Redis (src/idempotency/) under the caller's scope and
 * the key, with the fingerprint of the document (its sha256, so a text and its persisted hash are
 * one), `operationName` and the variables as canonical JSON. The first runs; a repeat after it
 * finished gets the recorded GraphQL answer with `Idempotent-Replayed: true` and runs nothing (so
 * no backend write, no subscription change, no webhook); a repeat while it runs is 409, the key
 * with another request 422, Redis away 503, all GraphQL-shaped (the route's `errorFormat`). A
 * query (or anything that is not a mutation) ignores the header, as do requests the handler will
 * refuse before knowing their operation. A request without the header costs one header lookup.
 *
 * Which answers are kept (`settleMutation`): the answer of a mutation that sent a backend write,
 * when its status is below 500, partial errors included (some root fields wrote: a retry must
 * not write them again). Released, so a retry runs: a refusal before execution (parse,
 * validation, variables, cost, a persisted query not found) or of every field before its write
 * (Outrigger's own refusals record nothing), a 5xx (backend failure leaving no data, the
 * deadline, an internal error) and a client that left.
 */
import { getOperationAST } from 'graphql';
import { exchangeForScope } from '../../chain/exchange.js';
import { badRequest } from '../../errors.js';
import type { RequestScope } from '../../http/scope.js';
import { canonicalJson, fingerprintOf } from '../../idempotency/fingerprint.js';
import { parseIdempotencyKey } from '../../idempotency/key.js';
import { claimRefusal, type ClaimWording } from '../../idempotency/refusals.js';
import { keyRequiredRefusal, type KeyRequired } from '../../idempotency/required.js';
import { idempotencyScope } from '../../idempotency/scope.js';
import type { IdempotencyStore, IdempotencyTicket } from '../../idempotency/store.js';
import type { CompiledApp } from '../compile/compile-app.js';
import { resolveTrusted, sha256Hex } from '../document/trusted/documents.js';
import { MAX_QUERY_BYTES } from '../types.js';
import { documentIdOf, type GraphqlParams } from './execute.js';
import { requestParams, type GraphqlHttpInput, type GraphqlHttpResponse } from './http-handler.js';
import type { PersistedQueries } from './persisted-queries.js';

export const REPLAYED_HEADER = 'idempotent-replayed';

/** A mutation's fingerprint: its document, operationName and variables (SPEC §14). */
const MUTATION_WORDING: ClaimWording = { runs: 'mutation', covers: 'document, operationName or variables' };

/** What the route needs: the store, the persisted queries a hash-only request names, and `idempotency.required`. */
export interface MutationIdempotency {
  readonly store: IdempotencyStore;
  readonly persistedQueries: PersistedQueries;
  /** Where a mutation without the header is refused (400); undefined when no condition is set. */
  readonly required: KeyRequired | undefined;
}

/** Whether the route must ask `claimMutation`: the request carries the header, or a mutation without it may be refused. */
export function mayClaim(idempotency: MutationIdempotency, scope: RequestScope): boolean {
  return scope.method === 'POST' && (scope.req.headers['idempotency-key'] !== undefined || idempotency.required !== undefined);
}

/** The claim's outcome for the route: nothing to do, a replay to write, or a run to settle. */
export type MutationClaim =
  { readonly kind: 'replay'; readonly status: number; readonly headers: Record<string, string>; readonly body: Buffer } | { readonly kind: 'run'; readonly ticket: IdempotencyTicket };

/**
 * Claims a keyed mutation; undefined when the request carries no key (and none is required) or is
 * not a mutation (run as usual). Throws the GraphQL-shaped refusals: 400 (the key, or none where
 * `idempotency.required` matches), 409 (running, or kept too large), 422, 503.
 */
export async function claimMutation(idempotency: MutationIdempotency, scope: RequestScope, app: CompiledApp, input: GraphqlHttpInput): Promise<MutationClaim | undefined> {
  const header = scope.req.headers['idempotency-key'];
  if (input.method !== 'POST') return undefined;
  // The conditions first (the head only): a document is parsed here only where a key may be required.
  if (header === undefined && (idempotency.required === undefined || !idempotency.required(exchangeForScope(scope)))) return undefined;
  const mutation = await mutationOf(input, app, idempotency.persistedQueries);
  if (mutation === undefined) return undefined;
  const parsed = parseIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
  if (parsed === undefined) throw keyRequiredRefusal(MUTATION_WORDING.runs);
  if ('problem' in parsed) throw badRequest(parsed.problem, 'IDEMPOTENCY_KEY_INVALID');
  const { key } = parsed;
  const authorization = scope.req.headers.authorization;
  const fingerprint = fingerprintOf(['graphql', scope.path, mutation.documentHash, mutation.params.operationName ?? '', canonicalJson(mutation.params.variables ?? {})]);
  const claim = await idempotency.store.claim(idempotencyScope(scope.principal, authorization, scope.clientIp), key, fingerprint);
  if (claim.kind === 'run') return claim;
  // A replay and the refusals below ran nothing: no webhook is evaluated against them (chain/stages/observe.ts).
  scope.idempotencyAnswered = true;
  if (claim.kind === 'replay') return { kind: 'replay', ...claim.answer };
  throw claimRefusal(claim, key, MUTATION_WORDING);
}

/**
 * Records the answer of a mutation that sent a backend write and answered below 500 (partial
 * errors included); releases the claim otherwise, so a retry runs: nothing was written (refused
 * before execution, or every field refused before its write), a 5xx, or the client left.
 */
export async function settleMutation(ticket: IdempotencyTicket, out: GraphqlHttpResponse | undefined, clientLeft: boolean): Promise<void> {
  const wrote = out !== undefined && out.backendReads !== undefined && (out.backendWrites ?? 0) > 0;
  if (!wrote || clientLeft || out.status >= 500) return ticket.release();
  return ticket.record({ status: out.status, headers: out.headers, body: Buffer.from(out.body) });
}

/** The request's parameters and its document's sha256 when its operation is a mutation the handler would run; else undefined. */
async function mutationOf(input: GraphqlHttpInput, app: CompiledApp, persisted: PersistedQueries): Promise<{ params: GraphqlParams; documentHash: string } | undefined> {
  const params = requestParams(input);
  if ('status' in params) return undefined;
  const text = await documentText(params, app, persisted);
  if (text === undefined || Buffer.byteLength(text, 'utf8') > MAX_QUERY_BYTES) return undefined;
  const { document } = app.prepare(text);
  if (document === undefined || getOperationAST(document, params.operationName ?? undefined)?.operation !== 'mutation') return undefined;
  return { params, documentHash: sha256Hex(text) };
}

/** The document's text as execution will find it: trusted documents, an automatic persisted query's registered text, or the query sent. */
async function documentText(params: GraphqlParams, app: CompiledApp, persisted: PersistedQueries): Promise<string | undefined> {
  const pq = params.extensions?.persistedQuery;
  if (pq !== undefined && app.trusted === undefined && params.query === undefined) {
    const hash = documentIdOf(params)?.slice('sha256:'.length);
    if (hash === undefined || !/^[0-9a-f]{64}$/.test(hash)) return undefined;
    try {
      return await persisted.store.get(app.id ?? app.uri, hash);
    } catch {
      return undefined; // the handler answers as it would (PersistedQueryNotFound): nothing runs
    }
  }
  const trusted = resolveTrusted(app.trusted, params.query, documentIdOf(params));
  return trusted.ok ? trusted.query : undefined;
}
