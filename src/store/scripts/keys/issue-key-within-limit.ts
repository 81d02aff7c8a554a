import { RedisScript } from '../../redis-script.js';

/**
 * Counts the owner's unexpired keys and stores the new one only when that count is below the
 * limit, in one atomic step: two replicas issuing at the limit at once cannot both succeed.
 * A key in its grace period after a rotation (it has `replacedBy`) is not counted (SPEC §15).
 * On the way it drops set members whose record is gone and records expired long ago.
 * Returns {1, count-after} when issued, {0, count} at the limit, {-1, 0} when the id is taken.
 */
export const issueKeyWithinLimit = new RedisScript(
  'issueKeyWithinLimit',
  `
local records, byHash, ofOwner, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, record, now, limit, expiresAt, sweepBefore = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
if redis.call('HEXISTS', records, id) == 1 then return {-1, 0} end
local active = 0
for _, member in ipairs(redis.call('SMEMBERS', ofOwner)) do
  local text = redis.call('HGET', records, member)
  if not text then
    redis.call('SREM', ofOwner, member)
  else
    local member_record = cjson.decode(text)
    local memberExpiresAt = tonumber(member_record.expiresAt)
    if memberExpiresAt > now then
      if not member_record.replacedBy then active = active + 1 end
    elseif memberExpiresAt < sweepBefore then
      redis.call('HDEL', records, member)
      redis.call('HDEL', lastUsed, member)
      redis.call('SREM', ofOwner, member)
    end
  end
end
if active >= limit then return {0, active} end
redis.call('HSET', records, id, record)
redis.call('SET', byHash, id, 'PXAT', expiresAt)
redis.call('SADD', ofOwner, id)
return {1, active + 1}
`,
);
