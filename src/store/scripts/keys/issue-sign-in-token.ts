import { RedisScript } from '../../redis-script.js';

/**
 * Stores a user's own sign-in token: like a key (record + hash index, so the same verifier
 * accepts it) but outside the owner's set, so it never counts against the key limit. Tokens
 * that expired over a day ago are swept on the way.
 */
export const issueSignInToken = new RedisScript(
  'issueSignInToken',
  `
local records, byHash, byExpiry, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, record, expiresAt, sweepBefore = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', records, id) == 1 then return 0 end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', byExpiry, '-inf', sweepBefore)) do
  redis.call('HDEL', records, member)
  redis.call('HDEL', lastUsed, member)
end
redis.call('ZREMRANGEBYSCORE', byExpiry, '-inf', sweepBefore)
redis.call('HSET', records, id, record)
redis.call('SET', byHash, id, 'PXAT', expiresAt)
redis.call('ZADD', byExpiry, expiresAt, id)
return 1
`,
);
