import { RedisScript } from '../redis-script.js';

/**
 * Gives back an attempt reserved by reserveFailureAttempt whose password was right. KEYS[1] the
 * counter. Only a live positive counter is lowered: DECR on a key that expired meanwhile would
 * create it at -1 with no TTL. Answers the new count (0 when nothing was lowered).
 */
export const releaseFailureAttempt = new RedisScript(
  'releaseFailureAttempt',
  `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used <= 0 then return 0 end
return redis.call('DECR', KEYS[1])
`,
);
