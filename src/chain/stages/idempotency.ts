/**
 * idempotency (SPEC §14): a proxied POST or PATCH carrying `Idempotency-Key` runs once per caller
 * and key. Its body is read whole (the fingerprint needs it), the record claimed in Redis (one
 * round trip): the first runs and its answer (below 500) is recorded before the client gets it
 * (one more), so a copy arriving after it always finds the record; a copy while it runs gets 409,
 * another request under the same key 422, and without Redis the write is refused (503), never run
 * unrecorded. A replay and these refusals never reach the backend, so they are not observed
 * (webhooks, subscription changes). After authenticate, limit, authorize and plan; before the
 * response cache and the forward. Own routes ignore the header. Absent when nothing serves Redis.
 */
import type { OutriggerConfig } from '../../config/types.js';
import type { Logger } from '../../observability/logger.js';
import { badRequest, OutriggerError, payloadTooLarge } from '../../errors.js';
import { readBody } from '../../http/body.js';
import { bodyPart, fingerprintOf } from '../../idempotency/fingerprint.js';
import { parseIdempotencyKey } from '../../idempotency/key.js';
import { claimRefusal, type ClaimWording } from '../../idempotency/refusals.js';
import { keyRequiredRefusal, keyRequiredWhere, type KeyRequired } from '../../idempotency/required.js';
import { idempotencyScope } from '../../idempotency/scope.js';
import type { IdempotencyStore, IdempotencyTicket, RecordedAnswer } from '../../idempotency/store.js';
import { composeCaptures, type ResponseCapture } from '../../proxy/forward-request.js';
import { exchangeForScope } from '../exchange.js';
import type { ChainRequest } from '../request.js';
import { ANSWERED, type Stage, type Step } from '../stage.js';

/** A proxied write's fingerprint: method, path with its query, and the body (SPEC §14). */
const WRITE_WORDING: ClaimWording = { runs: 'write', covers: 'method, path, query or body' };

export interface IdempotencyParts {
  readonly store: IdempotencyStore;
  /** idempotency.maxRequestBytes: a keyed write's body is read whole up to this (413 past it). */
  readonly maxRequestBytes: number;
  /** idempotency.required, parsed: where a write without the header is refused (400); undefined when none is set. */
  readonly required: KeyRequired | undefined;
  /** A record or release Redis refused (the run's answer is sent regardless). */
  readonly onError: (error: unknown, what: string) => void;
}

/** The answer's headers a replay repeats: what describes the body and the resource, never per-request ones. */
const KEPT_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location', 'location', 'etag', 'last-modified', 'link'];

/** The stage's parts from `idempotency:` (its conditions parsed once). */
export function idempotencyParts(store: IdempotencyStore, config: OutriggerConfig['idempotency'], logger: Logger): IdempotencyParts {
  return { store, maxRequestBytes: config.maxRequestBytes, required: keyRequiredWhere(config.required), onError: (error, what) => logger.warn({ err: (error as Error).message }, what) };
}

export function idempotencyStage(parts: IdempotencyParts | undefined): Stage | null {
  if (parts === undefined) return null;
  const { store, maxRequestBytes, required, onError } = parts;

  async function claimFor(request: ChainRequest, key: string): Promise<void | typeof ANSWERED> {
    const body = request.bufferedBody ?? (request.bufferedBody = await readKeyedBody(request, maxRequestBytes));
    const plan = request.plan!;
    if (plan.body === undefined) plan.body = body;
    const fingerprint = fingerprintOf([request.method, request.rawUrl, bodyPart(body, request.header('content-type'))]);
    const claim = await store.claim(idempotencyScope(request.principal, request.header('authorization'), request.clientIp), key, fingerprint);
    if (claim.kind === 'run') return void run(request, claim.ticket);
    // Nothing below reaches the backend: no webhook, no subscription change is fed by it.
    request.observed = null;
    if (claim.kind === 'replay') return replay(request, claim.answer);
    throw claimRefusal(claim, key, WRITE_WORDING);
  }

  function run(request: ChainRequest, ticket: IdempotencyTicket): void {
    const state: { readonly ticket: IdempotencyTicket; settled: boolean } = { ticket, settled: false };
    request.idempotentRun = state;
    const capture: ResponseCapture = {
      head(status, headers) {
        if (status >= 500) {
          release(request);
          return 'none';
        }
        // The answer waits for its record: a copy sent once this client has its answer finds it.
        return (body) => {
          state.settled = true;
          return ticket.record({ status, headers: keptHeaders(headers), body }).catch((error) => onError(error, 'recording an idempotent answer'));
        };
      },
      data() {},
      end() {},
    };
    const plan = request.plan!;
    plan.capture = plan.capture === undefined ? capture : composeCaptures(plan.capture, capture);
  }

  /** A run that ended without a recorded answer (a 5xx, a timeout, a broken connection, the client gone): a retry may run. */
  function release(request: ChainRequest): void {
    const state = request.idempotentRun;
    if (state === undefined || state.settled) return;
    state.settled = true;
    state.ticket.release().catch((error) => onError(error, 'releasing an idempotency record'));
  }

  return {
    name: 'idempotency',
    when: (request) => request.route === undefined && (request.method === 'POST' || request.method === 'PATCH'),
    run(request): Step {
      const value = request.header('idempotency-key');
      if (value === undefined) {
        if (required !== undefined && required(exchangeForScope(request))) throw keyRequiredRefusal(WRITE_WORDING.runs);
        return;
      }
      const parsed = parseIdempotencyKey(value)!;
      if ('problem' in parsed) throw badRequest(parsed.problem, 'IDEMPOTENCY_KEY_INVALID');
      return claimFor(request, parsed.key);
    },
    failed: (request) => release(request),
    close: (request) => release(request),
    span: { name: 'idempotency' },
  };
}

async function readKeyedBody(request: ChainRequest, limit: number): Promise<Buffer> {
  try {
    return await readBody(request, limit);
  } catch (error) {
    if (error instanceof OutriggerError && error.status === 413)
      throw payloadTooLarge(`a write with Idempotency-Key is read whole before it runs, and this body is larger than idempotency.maxRequestBytes (${limit} bytes)`);
    throw error;
  }
}

function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = headers[name];
    if (value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

function replay(request: ChainRequest, answer: RecordedAnswer): typeof ANSWERED {
  const res = request.res;
  if (res.destroyed) return ANSWERED;
  const bodyless = answer.status === 204 || answer.status === 304;
  const headers: Record<string, string | number> = { ...answer.headers, 'idempotent-replayed': 'true', 'x-request-id': request.id };
  if (!bodyless) headers['content-length'] = answer.body.length;
  if (request.rateLimitHeaders) Object.assign(headers, request.rateLimitHeaders);
  res.writeHead(answer.status, headers);
  res.end(bodyless ? undefined : answer.body);
  return ANSWERED;
}
