import { RedisScript } from '../../redis-script.js';

/**
 * Claims or renews the collections a replica has subscribers for (SPEC §6.5), on Redis's clock,
 * and sweeps the claims nobody renewed. Answers the members whose claim had lapsed (or was gone:
 * a restarted Redis) before this renewal: writes to them meanwhile were not published, so the
 * replica tells their subscribers to re-read (issue 53 item 11). On a first claim the answer is
 * expected and ignored.
 *
 * KEYS[1] the claims (sorted set: member -> expiry, ms). ARGV[1] the claim's lifetime (ms), then
 * the members. Returns the members that had lapsed.
 */
export const renewSubscriptionClaims = new RedisScript(
  'renewSubscriptionClaims',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = {}
for i = 2, #ARGV do
  local expires = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if not expires or tonumber(expires) < now then lapsed[#lapsed + 1] = ARGV[i] end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
return lapsed
`,
);
