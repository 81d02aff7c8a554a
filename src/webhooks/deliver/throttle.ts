/**
 * `maxPerSecond` (SPEC §7.1, failing targets): a webhook starts at most that many deliveries
 * per second, counted in one Redis key per webhook and second (a fixed window shared by every
 * worker, by the `countThrottledDelivery` script). The excess is not dropped and uses no
 * attempt: it waits in the retry set, spread over the following seconds.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../../store/keys.js';
import { countThrottledDelivery } from '../../store/scripts/count-throttled-delivery.js';

/** Null when a delivery may start now; else when it may be tried (the excess of a second spread over the next ones). */
export async function throttledUntil(redis: Redis, keys: RedisKeys, webhookId: string, perSecond: number, random: () => number): Promise<number | null> {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  const count = Number(await countThrottledDelivery.run(redis, [keys.webhookThrottle(webhookId, second)], []));
  if (count <= perSecond) return null;
  const secondsAhead = 1 + Math.floor((count - perSecond - 1) / perSecond);
  return (second + secondsAhead) * 1000 + Math.floor(random() * 1000);
}
