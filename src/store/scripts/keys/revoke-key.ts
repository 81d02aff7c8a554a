import { RedisScript } from '../../redis-script.js';

/** Deletes a key and its indexes, if it is still the key the caller read (same hash). */
export const revokeKey = new RedisScript(
  'revokeKey',
  `
local records, byHash, ofOwner, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, keyHash = ARGV[1], ARGV[2]
local text = redis.call('HGET', records, id)
if not text or cjson.decode(text).keyHash ~= keyHash then return 0 end
redis.call('HDEL', records, id)
redis.call('HDEL', lastUsed, id)
redis.call('SREM', ofOwner, id)
redis.call('DEL', byHash)
return 1
`,
);
