import { RedisScript } from '../../redis-script.js';

/**
 * Ends or extends a run claimed by claimIdempotencyRecord, only while the record is still the
 * run of this ticket (a lock that expired and was claimed by another run is not touched).
 * KEYS[1] the record. ARGV[1] the ticket, ARGV[2] the action:
 * - `record` status headers body ttlMs: the answer kept (state `done`) for ttlMs;
 * - `big` status ttlMs: only the status kept (state `big`), the answer was too large;
 * - `release`: the record deleted, so a retry runs;
 * - `refresh` lockMs: the lock's life renewed.
 * Answers 1 when the ticket held the record, 0 when it no longer did.
 */
export const settleIdempotencyRecord = new RedisScript(
  'settleIdempotencyRecord',
  `
local found = redis.call('HMGET', KEYS[1], 's', 't')
if found[1] ~= 'run' or found[2] ~= ARGV[1] then return 0 end
local action = ARGV[2]
if action == 'record' then
  redis.call('HSET', KEYS[1], 's', 'done', 'c', ARGV[3], 'h', ARGV[4], 'b', ARGV[5])
  redis.call('HDEL', KEYS[1], 't')
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
elseif action == 'big' then
  redis.call('HSET', KEYS[1], 's', 'big', 'c', ARGV[3])
  redis.call('HDEL', KEYS[1], 't')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
elseif action == 'release' then
  redis.call('DEL', KEYS[1])
elseif action == 'refresh' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
`,
);
