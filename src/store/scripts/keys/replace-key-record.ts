import { RedisScript } from '../../redis-script.js';

/**
 * Replaces a key's record (an admin's limits override, SPEC §10) only while it is the record
 * read: a key revoked or changed meanwhile is neither brought back nor overwritten.
 * KEYS[1] the records hash; ARGV: id, the record as read, the new record. Returns 1, or 0.
 */
export const replaceKeyRecord = new RedisScript(
  'replaceKeyRecord',
  `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`,
);
