import { RedisScript } from '../redis-script.js';

/** KEYS[1] the retry set; ARGV: now, lease-until, max jobs. Due jobs are re-scored to lease-until and returned. */
export const leaseDueRetries = new RedisScript(
  'leaseDueRetries',
  `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member) end
return due
`,
);
