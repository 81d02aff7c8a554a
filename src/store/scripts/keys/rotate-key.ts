import { RedisScript } from '../../redis-script.js';

/**
 * A key's rotation (SPEC §15) in one step: the old record is replaced by its grace version (a
 * shorter `expiresAt` and `replacedBy`) only while it is still the record read, so a revoke or a
 * second rotation racing this one cannot both win; its hash index gets the same expiry, and the
 * new key is stored as an issuance would store it. The owner's keys already in their grace
 * period are counted first: rotating again and again cannot pile up working keys beyond the limit.
 * KEYS: records, old key's hash index, new key's hash index, the owner's set.
 * ARGV: old id, old record as read, old record in grace, grace end (ms), new id, new record,
 * new expiresAt (ms), now (ms), the most keys in grace the owner may hold.
 * Returns {1, in grace after}, {0, 0} when the old record changed, {-1, 0} when the new id is
 * taken, {-2, in grace} at the limit.
 */
export const rotateKey = new RedisScript(
  'rotateKey',
  `
local records, oldByHash, newByHash, ofOwner = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local oldId, oldText, oldNext, graceUntil = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local newId, newRecord, newExpiresAt = ARGV[5], ARGV[6], ARGV[7]
local now, graceLimit = tonumber(ARGV[8]), tonumber(ARGV[9])
if redis.call('HGET', records, oldId) ~= oldText then return {0, 0} end
if redis.call('HEXISTS', records, newId) == 1 then return {-1, 0} end
local inGrace = 0
for _, member in ipairs(redis.call('SMEMBERS', ofOwner)) do
  local text = redis.call('HGET', records, member)
  if text then
    local record = cjson.decode(text)
    if record.replacedBy and tonumber(record.expiresAt) > now then inGrace = inGrace + 1 end
  end
end
if inGrace >= graceLimit then return {-2, inGrace} end
redis.call('HSET', records, oldId, oldNext)
redis.call('PEXPIREAT', oldByHash, graceUntil)
redis.call('HSET', records, newId, newRecord)
redis.call('SET', newByHash, newId, 'PXAT', newExpiresAt)
redis.call('SADD', ofOwner, newId)
return {1, inGrace + 1}
`,
);
