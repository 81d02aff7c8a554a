import type { Redis } from 'ioredis';
import { tooManyRequests } from '../errors.js';
import { clientAddressBucket } from '../net/client-address.js';
import { utcDay, type RedisKeys } from '../store/keys.js';
import { FailureCounters } from './failure-counters.js';

export const MAX_CONSECUTIVE_FAILURES = 10;
export const MAX_DAILY_FAILURES_PER_IP = 100;
/** How long the per-(user, IP) counter lives after the last failure: the lockout window. */
const USER_IP_WINDOW_SECONDS = 15 * 60;

/**
 * SPEC §3.2: 10 consecutive failures for a (user, client IP), or 100 failures from one IP in a
 * UTC day, answer 429. An IPv6 client counts as its /64 (net/client-address.ts): one subscriber
 * holds the whole /64, and counting its single addresses would give it 2^64 fresh allowances. The counters live in Redis so every replica sees the same numbers; a
 * success clears the (user, IP) counter ("consecutive"). While Redis is away each process keeps
 * counting and keeps the locks it knows of (FailureCounters), and Redis learns the counts back.
 */
export class BruteForceGuard {
  private readonly counters: FailureCounters;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.counters = new FailureCounters(redis);
  }

  /** Throws 429 with Retry-After when the caller is locked out. One round trip (GETs and a TTL in a pipeline). */
  async check(user: string, clientIp: string): Promise<void> {
    const ip = clientAddressBucket(clientIp);
    const [userIp, perIp] = await this.counters.read([this.keys.basicFailuresUserIp(user, ip), this.keys.basicFailuresIp(ip, utcDay())]);
    if (userIp!.count >= MAX_CONSECUTIVE_FAILURES) {
      const seconds = userIp!.remainingMs > 0 ? Math.ceil(userIp!.remainingMs / 1000) : USER_IP_WINDOW_SECONDS;
      throw tooManyRequests(`too many failed sign-ins for this user from your address; try again in ${seconds} s`, seconds);
    }
    if (perIp!.count >= MAX_DAILY_FAILURES_PER_IP) {
      const secondsToMidnight = Math.ceil((Date.parse(`${utcDay()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000);
      throw tooManyRequests('too many failed sign-ins from your address today; try again tomorrow (UTC)', secondsToMidnight);
    }
  }

  async recordFailure(user: string, clientIp: string): Promise<void> {
    const ip = clientAddressBucket(clientIp);
    await Promise.all([
      this.counters.add(this.keys.basicFailuresUserIp(user, ip), USER_IP_WINDOW_SECONDS * 1000),
      this.counters.add(this.keys.basicFailuresIp(ip, utcDay()), (86_400 + 3600) * 1000),
    ]);
  }

  async recordSuccess(user: string, clientIp: string): Promise<void> {
    await this.counters.clear(this.keys.basicFailuresUserIp(user, clientAddressBucket(clientIp)));
  }

  /**
   * A success answered from the sign-in cache (no check, no I/O): it still ends a run of
   * failures this process counted, so that "consecutive" means consecutive for cached callers
   * too. Failures only another replica counted are not seen here; they expire with their window.
   */
  recordCachedSuccess(user: string, clientIp: string): void {
    const key = this.keys.basicFailuresUserIp(user, clientAddressBucket(clientIp));
    if (this.counters.knows(key)) void this.counters.clear(key);
  }
}
