import { RedisScript } from '../../redis-script.js';

/**
 * Stores one automatic persisted query of an app and evicts the oldest registrations until the
 * app is back within its bounds, in one step: two replicas registering at once cannot both add
 * past the bound, and the byte total never drifts from the texts it counts.
 * KEYS: texts (hash sha256 -> text), order (sorted set of hashes by registration number), meta
 * (hash: `bytes`, `seq`). ARGV: sha256 hex, text, max count, max bytes, TTL (ms).
 * A known hash only moves to the young end (its text is the same: the hash names it).
 * Returns {1, evicted} when stored, {0, 0} when the text alone is over the byte bound.
 */
export const registerPersistedQuery = new RedisScript(
  'registerPersistedQuery',
  `
local texts, order, meta = KEYS[1], KEYS[2], KEYS[3]
local hash, text, maxCount, maxBytes, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local size = string.len(text)
if size > maxBytes then return {0, 0} end
local seq = redis.call('HINCRBY', meta, 'seq', 1)
local evicted = 0
if redis.call('HEXISTS', texts, hash) == 1 then
  redis.call('ZADD', order, seq, hash)
else
  redis.call('HSET', texts, hash, text)
  redis.call('ZADD', order, seq, hash)
  local total = redis.call('HINCRBY', meta, 'bytes', size)
  while redis.call('ZCARD', order) > maxCount or total > maxBytes do
    local oldest = redis.call('ZPOPMIN', order)[1]
    if not oldest then break end
    total = redis.call('HINCRBY', meta, 'bytes', -redis.call('HSTRLEN', texts, oldest))
    redis.call('HDEL', texts, oldest)
    evicted = evicted + 1
  end
end
redis.call('PEXPIRE', texts, ttl)
redis.call('PEXPIRE', order, ttl)
redis.call('PEXPIRE', meta, ttl)
return {1, evicted}
`,
);
