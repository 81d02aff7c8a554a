import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { tooManyRequests } from '../errors.js';
import { clientAddressBucket } from '../net/client-address.js';
import { utcDay, type RedisKeys } from '../store/keys.js';
import { FailureCounters } from './failure-counters.js';

export const MAX_CONSECUTIVE_FAILURES = 10;
export const MAX_DAILY_FAILURES_PER_IP = 100;
/** How long the per-(user, IP) counter lives after the last failure: the lockout window. */
const USER_IP_WINDOW_SECONDS = 15 * 60;
/** The per-address day counter outlives its UTC day by an hour (clock skew between replicas). */
const DAILY_WINDOW_SECONDS = 86_400 + 3600;
/** Longest user id kept verbatim in a counter's key; a longer one is stored as its hash. */
export const MAX_USER_IN_KEY = 128;

/**
 * SPEC §3.2: 10 consecutive failures for a (user, client IP), or 100 failures from one IP in a
 * UTC day, answer 429; every attempt is counted before its password is checked (reserve). An IPv6 client counts as its /64 (net/client-address.ts): one subscriber
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

  /**
   * Counts this attempt as a failure BEFORE its password is checked, atomically on both counters
   * (one Redis script), or throws 429 with Retry-After when either is at its limit: concurrent
   * guesses are each counted before any is verified, so 60 at once from one address get 10
   * answers and 429s, and 1,000 with distinct user ids stop at the daily 100. A right password
   * gives the attempt back (succeeded), a verifier that could not decide too (undecided).
   */
  async reserve(user: string, clientIp: string): Promise<void> {
    const [userIp, perIp] = this.counterKeys(user, clientIp);
    const { locked, remainingMs } = await this.counters.reserve([
      { key: userIp, limit: MAX_CONSECUTIVE_FAILURES, windowMs: USER_IP_WINDOW_SECONDS * 1000 },
      { key: perIp, limit: MAX_DAILY_FAILURES_PER_IP, windowMs: DAILY_WINDOW_SECONDS * 1000 },
    ]);
    if (locked === 0) {
      const seconds = remainingMs > 0 ? Math.ceil(remainingMs / 1000) : USER_IP_WINDOW_SECONDS;
      throw tooManyRequests(`too many failed sign-ins for this user from your address; try again in ${seconds} s`, seconds);
    }
    if (locked === 1) {
      const secondsToMidnight = Math.ceil((Date.parse(`${utcDay()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000);
      throw tooManyRequests('too many failed sign-ins from your address today; try again tomorrow (UTC)', secondsToMidnight);
    }
  }

  /** The password was right: the run of failures ends and the day's count gets its attempt back. */
  async succeeded(user: string, clientIp: string): Promise<void> {
    const [userIp, perIp] = this.counterKeys(user, clientIp);
    await Promise.all([this.counters.clear(userIp), this.counters.release(perIp)]);
  }

  /** The verifier failed (its backend away) before deciding: the attempt was no guess. */
  async undecided(user: string, clientIp: string): Promise<void> {
    await Promise.all(this.counterKeys(user, clientIp).map((key) => this.counters.release(key)));
  }

  /**
   * The two counters' keys. A user id longer than MAX_USER_IN_KEY is stored as its SHA-256: a
   * failed attempt stores a bounded key whatever id it sent (an 11,000-character id made a 12 KB
   * key), and the process's copy of the counters is bounded with it.
   */
  private counterKeys(user: string, clientIp: string): [string, string] {
    const ip = clientAddressBucket(clientIp);
    const userPart = user.length <= MAX_USER_IN_KEY ? user : `sha256:${createHash('sha256').update(user).digest('base64url')}`;
    return [this.keys.basicFailuresUserIp(userPart, ip), this.keys.basicFailuresIp(ip, utcDay())];
  }

  /**
   * A success answered from the sign-in cache (no check, no I/O): it still ends a run of
   * failures this process counted, so that "consecutive" means consecutive for cached callers
   * too. Failures only another replica counted are not seen here; they expire with their window.
   */
  recordCachedSuccess(user: string, clientIp: string): void {
    const [key] = this.counterKeys(user, clientIp);
    if (this.counters.knows(key)) void this.counters.clear(key);
  }
}
