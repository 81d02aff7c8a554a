/**
 * What a claim that may not run answers (SPEC §14), worded once for every door that claims: a
 * proxied write (chain/stages/idempotency.ts) and a GraphQL mutation (graphql/serve/idempotent-mutation.ts,
 * which MCP mutation tools reach too). Each names the key; the door says what it runs and what its
 * fingerprint covers, so a 422 tells the caller which part of its request differed.
 */
import { conflict, OutriggerError } from '../errors.js';
import { redisRefusal } from '../store/redis-errors.js';
import type { Claim } from './store.js';

export interface ClaimWording {
  /** What runs once: "write" or "mutation". */
  readonly runs: string;
  /** What the fingerprint covers, e.g. "method, path, query or body". */
  readonly covers: string;
}

export type RefusedClaim = Exclude<Claim, { kind: 'run' } | { kind: 'replay' }>;

/** The 409, 422 or 503 a claim that may not run answers. */
export function claimRefusal(claim: RefusedClaim, key: string, wording: ClaimWording): OutriggerError {
  const named = JSON.stringify(key);
  switch (claim.kind) {
    case 'in-flight':
      return conflict(`a request with Idempotency-Key ${named} is still being processed; retry once it has finished to get its answer`, 'IDEMPOTENCY_KEY_IN_USE');
    case 'mismatch':
      return new OutriggerError(422, 'IDEMPOTENCY_KEY_REUSED', `Idempotency-Key ${named} was already used for a different request (${wording.covers}); send a new key for a new request`);
    case 'too-large':
      return conflict(
        `the ${wording.runs} with Idempotency-Key ${named} already ran (status ${claim.status}), but its answer was too large to keep (over idempotency.maxBodyBytes); it is not run again`,
        'IDEMPOTENCY_ANSWER_NOT_KEPT',
      );
    default:
      return unavailable(claim.error, wording.runs);
  }
}

/** Redis could not record the claim: nothing runs unrecorded (SPEC §14), and the client retries after a while. */
function unavailable(error: unknown, runs: string): OutriggerError {
  const refusal = redisRefusal(error);
  const why = refusal ? refusal.message : "Outrigger's store (Redis) cannot record it right now; retry shortly";
  return new OutriggerError(503, 'IDEMPOTENCY_UNAVAILABLE', `a ${runs} with Idempotency-Key is not run unless it can be recorded: ${why}`, {
    'retry-after': String(refusal?.retryAfterSeconds ?? 5),
  });
}
