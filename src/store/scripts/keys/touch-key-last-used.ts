import { RedisScript } from '../../redis-script.js';

/** Records a use only if newer than the stored one, and never for a key revoked meanwhile. */
export const touchKeyLastUsed = new RedisScript(
  'touchKeyLastUsed',
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if current and current >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`,
);
