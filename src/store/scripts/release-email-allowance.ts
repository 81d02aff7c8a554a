import { RedisScript } from '../redis-script.js';

/** KEYS[1] the day's counter; ARGV: recipients to give back. Never goes below zero. */
export const releaseEmailAllowance = new RedisScript(
  'releaseEmailAllowance',
  `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local back = math.min(used, tonumber(ARGV[1]))
if back > 0 then redis.call('DECRBY', KEYS[1], back) end
return used - back
`,
);
