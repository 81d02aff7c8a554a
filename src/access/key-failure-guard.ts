import type { Redis } from 'ioredis';
import { OutriggerError } from '../errors.js';
import { clientAddressBucket } from '../net/client-address.js';
import type { RedisKeys } from '../store/keys.js';
import { FailureCounters } from './failure-counters.js';

export interface KeyFailureLimits {
  /** Failed verifications one client IP may make (apiKeys.maxFailuresPerClient)... */
  maxFailures: number;
  /** ...within this window, which restarts with each failure (apiKeys.failureWindowSeconds). */
  windowSeconds: number;
}

/**
 * Bearer floods (random well-formed keys each cost a Redis read): past `maxFailures` failed key
 * verifications from one client IP (an IPv6 client: its /64, net/client-address.ts), its further unknown keys are answered 429 without any I/O
 * until the window has passed. The count is shared through Redis, written at most one round trip
 * at a time per IP (failures that arrive meanwhile go with the next write); each replica learns
 * the shared total from its own writes' replies, so a replica the flood had not reached yet lets
 * at most one failure through before it locks too. While Redis is away it counts in-process.
 */
export class KeyFailureGuard {
  private readonly counters: FailureCounters;
  private readonly windowMs: number;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    private readonly limits: KeyFailureLimits,
  ) {
    this.counters = new FailureCounters(redis);
    this.windowMs = limits.windowSeconds * 1000;
  }

  /** Throws 429 with Retry-After when the client IP has used up its failures. No I/O. */
  check(ip: string): void {
    const { count, remainingMs } = this.counters.peek(this.keys.apiKeyFailuresIp(clientAddressBucket(ip)));
    if (count < this.limits.maxFailures) return;
    const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
    throw new OutriggerError(
      429,
      'TOO_MANY_KEY_FAILURES',
      `too many failed API key verifications from your address (${this.limits.maxFailures} within ${this.limits.windowSeconds} s, apiKeys.maxFailuresPerClient); try again in ${seconds} s`,
      { 'retry-after': String(seconds) },
    );
  }

  /** Never awaited by the request: the refusal goes out at once. */
  recordFailure(ip: string): void {
    void this.counters.add(this.keys.apiKeyFailuresIp(clientAddressBucket(ip)), this.windowMs);
  }
}
