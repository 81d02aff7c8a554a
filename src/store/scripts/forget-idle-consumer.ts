import { RedisScript } from '../redis-script.js';

/**
 * KEYS[1] the event stream; ARGV: group, consumer. Deletes the consumer from the group only if
 * nothing is pending for it, and answers 1 if it did. One step: XGROUP DELCONSUMER drops the
 * consumer's pending entries for good, so an entry handed to it between a separate check and the
 * delete (a read still blocked on the server while the worker stops) would be lost.
 */
export const forgetIdleConsumer = new RedisScript(
  'forgetIdleConsumer',
  `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
);
