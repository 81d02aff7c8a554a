import { RedisScript } from '../redis-script.js';

/** KEYS[1] the day's counter; ARGV: recipients, daily allowance, TTL seconds. Returns the new count, or -1 when it would exceed. */
export const reserveEmailAllowance = new RedisScript(
  'reserveEmailAllowance',
  `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if used + wanted > tonumber(ARGV[2]) then return -1 end
local total = redis.call('INCRBY', KEYS[1], wanted)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return total
`,
);
