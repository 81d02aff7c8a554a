import { RedisScript } from '../redis-script.js';

/** KEYS[1] the throttle counter of one webhook and second; returns the deliveries started in that second, this one included. */
export const countThrottledDelivery = new RedisScript(
  'countThrottledDelivery',
  `
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], 2000) end
return c
`,
);
