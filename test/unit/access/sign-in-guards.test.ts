import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { BruteForceGuard, MAX_CONSECUTIVE_FAILURES, MAX_DAILY_FAILURES_PER_IP, MAX_USER_IN_KEY } from '../../../src/access/brute-force-guard.js';
import { KeyFailureGuard } from '../../../src/access/key-failure-guard.js';
import { OutriggerError } from '../../../src/errors.js';
import { redisKeys, utcDay } from '../../../src/store/keys.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';

// The two sign-in guards over a real Redis, without HTTP: which counters an attempt counts on,
// the 429 each answers and its Retry-After. Written so that `npm run mutate` kills their mutants
// (issue 54); test/integration/access and test/adversarial/bearer-flood drive them through HTTP.
const keys = redisKeys('t', 'svc');

async function refusal(promise: Promise<unknown> | (() => void)): Promise<OutriggerError> {
  try {
    if (typeof promise === 'function') promise();
    else await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(OutriggerError);
    return error as OutriggerError;
  }
  throw new Error('expected a refusal');
}

describe('sign-in guards', () => {
  let redis: TestRedis;
  let conn: Redis;
  beforeAll(async () => {
    redis = await startTestRedis();
    conn = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  });
  beforeEach(async () => {
    await redis.client.flushall();
  });
  afterAll(async () => {
    conn?.disconnect();
    await redis?.close();
  });

  describe('BruteForceGuard', () => {
    it(`allows ${MAX_CONSECUTIVE_FAILURES} attempts per user and address, then answers 429 with the lockout's Retry-After`, async () => {
      const guard = new BruteForceGuard(conn, keys);
      for (let i = 0; i < MAX_CONSECUTIVE_FAILURES; i++) await guard.reserve('alice', '192.0.2.1');
      expect(await redis.client.get(keys.basicFailuresUserIp('alice', '192.0.2.1'))).toBe(String(MAX_CONSECUTIVE_FAILURES));
      expect(await redis.client.get(keys.basicFailuresIp('192.0.2.1', utcDay()))).toBe(String(MAX_CONSECUTIVE_FAILURES));
      const pttl = await redis.client.pttl(keys.basicFailuresUserIp('alice', '192.0.2.1'));
      expect(pttl).toBeGreaterThan(14 * 60_000);
      expect(pttl).toBeLessThanOrEqual(15 * 60_000);
      expect(await redis.client.pttl(keys.basicFailuresIp('192.0.2.1', utcDay()))).toBeGreaterThan(86_400_000);
      const error = await refusal(guard.reserve('alice', '192.0.2.1'));
      expect(error.status).toBe(429);
      const seconds = Number(error.headers?.['retry-after']);
      expect(seconds).toBeGreaterThan(14 * 60);
      expect(seconds).toBeLessThanOrEqual(15 * 60);
      expect(error.message).toContain(`${seconds} s`);
      // Another user from the same address, and the same user from another, still get their tries.
      await guard.reserve('bob', '192.0.2.1');
      await guard.reserve('alice', '192.0.2.2');
    });

    it('a success ends the run of failures and gives the day its attempt back', async () => {
      const guard = new BruteForceGuard(conn, keys);
      for (let i = 0; i < MAX_CONSECUTIVE_FAILURES - 1; i++) await guard.reserve('alice', '192.0.2.1');
      await guard.reserve('alice', '192.0.2.1');
      await guard.succeeded('alice', '192.0.2.1');
      expect(await redis.client.exists(keys.basicFailuresUserIp('alice', '192.0.2.1'))).toBe(0);
      expect(await redis.client.get(keys.basicFailuresIp('192.0.2.1', utcDay()))).toBe(String(MAX_CONSECUTIVE_FAILURES - 1));
      for (let i = 0; i < MAX_CONSECUTIVE_FAILURES; i++) await guard.reserve('alice', '192.0.2.1');
    });

    it('an undecided attempt is given back on both counters', async () => {
      const guard = new BruteForceGuard(conn, keys);
      await guard.reserve('alice', '192.0.2.1');
      await guard.reserve('alice', '192.0.2.1');
      await guard.undecided('alice', '192.0.2.1');
      expect(await redis.client.get(keys.basicFailuresUserIp('alice', '192.0.2.1'))).toBe('1');
      expect(await redis.client.get(keys.basicFailuresIp('192.0.2.1', utcDay()))).toBe('1');
    });

    it(`stops an address at ${MAX_DAILY_FAILURES_PER_IP} a day whatever the user ids, until the next UTC day`, async () => {
      const guard = new BruteForceGuard(conn, keys);
      await redis.client.set(keys.basicFailuresIp('192.0.2.9', utcDay()), String(MAX_DAILY_FAILURES_PER_IP - 1), 'PX', 86_400_000);
      await guard.reserve('u-last', '192.0.2.9');
      const error = await refusal(guard.reserve('u-next', '192.0.2.9'));
      expect(error.status).toBe(429);
      expect(error.message).toContain('today');
      const toMidnight = Math.ceil((Date.parse(`${utcDay()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000);
      expect(Math.abs(Number(error.headers?.['retry-after']) - toMidnight)).toBeLessThanOrEqual(2);
    });

    it('counts an IPv6 client as its /64, and a very long user id as its hash', async () => {
      const guard = new BruteForceGuard(conn, keys);
      for (let i = 0; i < MAX_CONSECUTIVE_FAILURES; i++) await guard.reserve('alice', `2001:db8:1:2::${i + 1}`);
      await refusal(guard.reserve('alice', '2001:db8:1:2:ffff::1'));
      const long = 'u'.repeat(MAX_USER_IN_KEY + 1);
      await guard.reserve(long, '192.0.2.1');
      await guard.reserve('v'.repeat(MAX_USER_IN_KEY), '192.0.2.1');
      const stored = await redis.client.keys(keys.basicFailuresUserIp('*', '192.0.2.1'));
      expect(stored.some((k) => k.includes('sha256:'))).toBe(true);
      expect(stored.some((k) => k.includes('v'.repeat(MAX_USER_IN_KEY)))).toBe(true);
      expect(stored.every((k) => !k.includes(long))).toBe(true);
    });

    it("answers the lock's own remaining time, short when the lock is about to end", async () => {
      const guard = new BruteForceGuard(conn, keys);
      await redis.client.set(keys.basicFailuresUserIp('carol', '192.0.2.3'), String(MAX_CONSECUTIVE_FAILURES), 'PX', 4500);
      const error = await refusal(guard.reserve('carol', '192.0.2.3'));
      expect(error.headers?.['retry-after']).toBe('5');
      expect(error.message).toContain('try again in 5 s');
    });

    it('a success from the sign-in cache costs no Redis command when this process counted no failure', async () => {
      const guard = new BruteForceGuard(conn, keys);
      const c0 = await redis.commandsProcessed();
      const c1 = await redis.commandsProcessed();
      for (let i = 0; i < 5; i++) guard.recordCachedSuccess('dave', '192.0.2.4');
      // A DEL would have been written on the guard's connection before this PING is answered.
      await conn.ping();
      const c2 = await redis.commandsProcessed();
      expect(c2 - c1).toBe(c1 - c0 + 1);
    });

    it('a success from the sign-in cache clears a run this process counted', async () => {
      const guard = new BruteForceGuard(conn, keys);
      await guard.reserve('alice', '192.0.2.1');
      guard.recordCachedSuccess('alice', '192.0.2.1');
      guard.recordCachedSuccess('nobody', '192.0.2.1');
      await until(async () => (await redis.client.exists(keys.basicFailuresUserIp('alice', '192.0.2.1'))) === 0, 'the clear sent');
      expect(await redis.client.exists(keys.basicFailuresUserIp('alice', '192.0.2.1'))).toBe(0);
    });
  });

  describe('KeyFailureGuard', () => {
    it('lets maxFailures failures through, then answers 429 with no I/O, naming the limit and the wait', async () => {
      const guard = new KeyFailureGuard(conn, keys, { maxFailures: 3, windowSeconds: 30 });
      for (let i = 0; i < 3; i++) {
        guard.check('192.0.2.1');
        guard.recordFailure('192.0.2.1');
      }
      const error = await refusal(() => guard.check('192.0.2.1'));
      expect(error.status).toBe(429);
      expect(error.code).toBe('TOO_MANY_KEY_FAILURES');
      expect(error.message).toContain('3 within 30 s');
      const seconds = Number(error.headers?.['retry-after']);
      expect(seconds).toBeGreaterThanOrEqual(29);
      expect(seconds).toBeLessThanOrEqual(30);
      // Shared through Redis, with the window as the TTL; other addresses unaffected.
      await until(async () => (await redis.client.get(keys.apiKeyFailuresIp('192.0.2.1'))) === '3', 'the three failures in Redis');
      expect(await redis.client.get(keys.apiKeyFailuresIp('192.0.2.1'))).toBe('3');
      expect(await redis.client.pttl(keys.apiKeyFailuresIp('192.0.2.1'))).toBeGreaterThan(25_000);
      guard.check('192.0.2.2');
    });

    it('says at least 1 s when the window is about to end', async () => {
      const guard = new KeyFailureGuard(conn, keys, { maxFailures: 1, windowSeconds: 0.2 });
      guard.recordFailure('192.0.2.7');
      const error = await refusal(() => guard.check('192.0.2.7'));
      expect(error.headers?.['retry-after']).toBe('1');
    });
  });
});
