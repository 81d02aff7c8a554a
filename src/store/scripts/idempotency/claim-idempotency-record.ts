import { RedisScript } from '../../redis-script.js';

/**
 * Claims an idempotency record (SPEC §14) in one round trip. KEYS[1] the record (a hash). ARGV:
 * the request's fingerprint, this run's ticket (random), the lock's life in ms. With no record it
 * writes one in state `run` held by the ticket, living the lock's life, and answers `{'run'}`.
 * Otherwise: `{'mismatch'}` for another fingerprint; `{'in-flight'}` while it runs; `{'big', status}`
 * for an answer recorded as its status only; `{'done', status, headers, body}` for a recorded answer.
 */
export const claimIdempotencyRecord = new RedisScript(
  'claimIdempotencyRecord',
  `
local found = redis.call('HMGET', KEYS[1], 's', 'f', 'c', 'h', 'b')
local state = found[1]
if not state then
  redis.call('HSET', KEYS[1], 's', 'run', 'f', ARGV[1], 't', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'run'}
end
if found[2] ~= ARGV[1] then return {'mismatch'} end
if state == 'run' then return {'in-flight'} end
if state == 'big' then return {'big', found[3]} end
return {'done', found[3], found[4], found[5]}
`,
);
