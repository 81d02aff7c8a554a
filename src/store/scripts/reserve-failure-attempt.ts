import { RedisScript } from '../redis-script.js';

/**
 * Reserves one attempt on every failure counter of a sign-in, all or none, BEFORE the password
 * is checked: concurrent guesses cannot all read "under the limit" and then all be verified.
 * KEYS: the counters. ARGV: per key, its limit, its window in ms and the failures this replica
 * counted while Redis was away (added with the reservation). Answers {0} when reserved, or
 * {i, pttl} when counter i (1-based) is at its limit (nothing is written then).
 */
export const reserveFailureAttempt = new RedisScript(
  'reserveFailureAttempt',
  `
for i = 1, #KEYS do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0') + tonumber(ARGV[3 * i])
  if used >= tonumber(ARGV[3 * i - 2]) then
    return {i, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, #KEYS do
  redis.call('INCRBY', KEYS[i], 1 + tonumber(ARGV[3 * i]))
  redis.call('PEXPIRE', KEYS[i], ARGV[3 * i - 1])
end
return {0}
`,
);
