import type { Redis } from 'ioredis';
import { tooManyRequests } from '../errors.js';
import { utcDay, type RedisKeys } from '../store/keys.js';

export const MAX_CONSECUTIVE_FAILURES = 10;
export const MAX_DAILY_FAILURES_PER_IP = 100;
/** How long the per-(user, IP) counter lives after the last failure: the lockout window. */
const USER_IP_WINDOW_SECONDS = 15 * 60;

/**
 * SPEC §3.2: 10 consecutive failures for a (user, client IP), or 100 failures from one IP in a
 * UTC day, answer 429. The counters live in Redis so every replica sees the same numbers; a
 * success clears the (user, IP) counter ("consecutive").
 */
export class BruteForceGuard {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /** Throws 429 with Retry-After when the caller is locked out. One round trip (MGET + TTLs in a pipeline). */
  async check(user: string, ip: string): Promise<void> {
    const userKey = this.keys.basicFailuresUserIp(user, ip);
    const ipKey = this.keys.basicFailuresIp(ip, utcDay());
    const results = await this.redis.pipeline().get(userKey).get(ipKey).ttl(userKey).exec();
    const userFailures = Number(results?.[0]?.[1] ?? 0);
    const ipFailures = Number(results?.[1]?.[1] ?? 0);
    if (userFailures >= MAX_CONSECUTIVE_FAILURES) {
      const ttl = Number(results?.[2]?.[1] ?? USER_IP_WINDOW_SECONDS);
      throw tooManyRequests(
        `too many failed sign-ins for this user from your address; try again in ${Math.max(ttl, 1)} s`,
        ttl > 0 ? ttl : USER_IP_WINDOW_SECONDS,
      );
    }
    if (ipFailures >= MAX_DAILY_FAILURES_PER_IP) {
      const secondsToMidnight = Math.ceil((Date.parse(`${utcDay()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000);
      throw tooManyRequests('too many failed sign-ins from your address today; try again tomorrow (UTC)', secondsToMidnight);
    }
  }

  async recordFailure(user: string, ip: string): Promise<void> {
    const userKey = this.keys.basicFailuresUserIp(user, ip);
    const ipKey = this.keys.basicFailuresIp(ip, utcDay());
    await this.redis
      .multi()
      .incr(userKey)
      .expire(userKey, USER_IP_WINDOW_SECONDS)
      .incr(ipKey)
      .expire(ipKey, 86_400 + 3600)
      .exec();
  }

  async recordSuccess(user: string, ip: string): Promise<void> {
    await this.redis.del(this.keys.basicFailuresUserIp(user, ip));
  }
}
