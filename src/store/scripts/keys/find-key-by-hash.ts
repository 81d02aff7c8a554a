import { RedisScript } from '../../redis-script.js';

/** The record of a key hash, in one round trip (the hash index holds the record id). */
export const findKeyByHash = new RedisScript(
  'findKeyByHash',
  `
local id = redis.call('GET', KEYS[1])
if not id then return false end
return redis.call('HGET', KEYS[2], id)
`,
);
